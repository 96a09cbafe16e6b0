package dnsprovider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/caddyserver/certmagic"
	"github.com/libdns/route53"
)

// AWSConfig is what route53 hands the AWS SDK: a static key pair when the
// environment gives one, else the SDK's own chain from Profile on.
type AWSConfig struct {
	Region, Profile                          string
	AccessKeyID, SecretAccessKey, SessionKey string
}

// awsCheckTimeout bounds the start-up resolution of route53's credentials
// (the SDK's chain may ask a metadata service).
const awsCheckTimeout = 10 * time.Second

// newRoute53: the AWS SDK's credentials, resolved now (package doc).
func newRoute53(ctx context.Context, env Env) (certmagic.DNSProvider, error) {
	var c AWSConfig
	var err error
	if c.AccessKeyID, err = env.secret("AWS_ACCESS_KEY_ID"); err != nil {
		return nil, err
	}
	if c.SecretAccessKey, err = env.secret("AWS_SECRET_ACCESS_KEY"); err != nil {
		return nil, err
	}
	if c.SessionKey, err = env.secret("AWS_SESSION_TOKEN"); err != nil {
		return nil, err
	}
	switch {
	case c.AccessKeyID != "" && c.SecretAccessKey == "":
		return nil, fmt.Errorf("AWS_ACCESS_KEY_ID is set without AWS_SECRET_ACCESS_KEY (or AWS_SECRET_ACCESS_KEY_FILE)")
	case c.AccessKeyID == "" && c.SecretAccessKey != "":
		return nil, fmt.Errorf("AWS_SECRET_ACCESS_KEY is set without AWS_ACCESS_KEY_ID (or AWS_ACCESS_KEY_ID_FILE)")
	}
	c.Profile = env.Getenv("AWS_PROFILE")
	c.Region = env.Getenv("AWS_REGION")
	if c.Region == "" {
		c.Region = env.Getenv("AWS_DEFAULT_REGION")
	}
	if c.Region == "" {
		c.Region = "us-east-1" // Route 53 is global; the SDK still wants a region
	}
	check := env.AWSCheck
	if check == nil {
		check = awsCheck
	}
	cctx, cancel := context.WithTimeout(ctx, awsCheckTimeout)
	defer cancel()
	if err := check(cctx, c); err != nil {
		return nil, fmt.Errorf("no usable AWS credentials (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or run with a role): %w", err)
	}
	return &route53.Provider{
		Region: c.Region, Profile: c.Profile,
		AccessKeyId: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, SessionToken: c.SessionKey,
		HostedZoneID: env.Getenv("AWS_HOSTED_ZONE_ID"),
	}, nil
}

// awsCheck loads the SDK's configuration as route53.Provider does and
// resolves its credentials once: a profile that does not exist, or no
// credentials anywhere, fail here rather than at the first order (where
// the provider would end the process).
func awsCheck(ctx context.Context, c AWSConfig) error {
	opts := []func(*config.LoadOptions) error{config.WithRegion(c.Region)}
	if c.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(c.Profile))
	}
	if c.AccessKeyID != "" {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, c.SessionKey)))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return fmt.Errorf("loading the AWS configuration: %w", err)
	}
	if cfg.Credentials == nil {
		return errors.New("the AWS SDK found no credentials provider")
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		return fmt.Errorf("resolving the AWS credentials: %w", err)
	}
	return nil
}
