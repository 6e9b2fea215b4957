package main

// The zone database is built into the binary (about 450 kB): a runtime
// image may have none (scratch, a minimal base), and a person's /tz or
// GATEHOUSE_TIMEZONE must load on every replica alike. The system's
// zoneinfo, where there is one, is still read first.
import _ "time/tzdata"
