package main

import "github.com/gatehouse/gatehouse/cmd/gatehouse/internal/config"

// Config is every setting of the gateway (package config).
type Config = config.Config

// The settings table's parts this binary uses, by their short names.
var (
	loadConfig          = config.Load
	printSettings       = config.PrintSettings
	parsePrices         = config.ParsePrices
	parseContacts       = config.ParseContacts
	parseThinkingModels = config.ParseThinkingModels
	noPlatformHint      = config.NoPlatformHint
)
