package slackchat

// What the external tests read of the package's insides.
var (
	// APIEndpoint is apiEndpoint, for the SLACK_API_URL table.
	APIEndpoint = apiEndpoint
	// RefusedReconnect is the policy a refused app token is retried at.
	RefusedReconnect = refusedReconnect
)
