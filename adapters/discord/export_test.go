package discord

// ReconnectPolicy is the gateway socket's reconnect policy with the
// default Config.ReconnectMaxWait, so tests bound the loop's attempts
// with it rather than with figures of their own.
var ReconnectPolicy = reconnectPolicy
