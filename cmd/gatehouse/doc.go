// Command gatehouse is the gateway binary and the only place that reads
// configuration and wires packages together.
//
//	gatehouse serve [--config gatehouse.yaml]   run the gateway
//	gatehouse migrate [--config gatehouse.yaml] apply database migrations
//	gatehouse version                           print the version
package main
