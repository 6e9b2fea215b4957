// Package config is the gateway's settings: the Config struct whose
// fields document their defaults, the settings table that loads it from
// the optional config file and the environment (which wins) and prints
// it for --help, the approver lists, and the chat platforms this binary
// offers with their settings. Only the binary (cmd/gatehouse) uses it: it
// is the one place that reads configuration.
package config
