package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/people"
)

const pairUsage = `Usage:
  gatehouse pair approve CODE [--config FILE]
      let in the person the pairing code was sent to (GATEHOUSE_PAIRING=on)
  gatehouse pair list [--config FILE]
      the pending pairing codes and the people let in
  gatehouse pair revoke PLATFORM USER [--config FILE]
      let a person out again: their next message is dropped

It opens the configured database (GATEHOUSE_DATABASE_URL, or the SQLite file
under GATEHOUSE_DATA_DIR) — the one the gateway serves — and needs no
running gateway. A person let in is allowed from their next message on.
`

// runPair is `gatehouse pair …`: pairing from the command line, on the
// configured store.
func runPair(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, pairUsage)
		return 2
	}
	sub := args[0]
	if sub == "help" || sub == "--help" || sub == "-h" {
		fmt.Fprint(stdout, pairUsage)
		return 0
	}
	fs := flag.NewFlagSet("pair "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	configFile := fs.String("config", "", "YAML config file; environment variables win over it")
	fs.Usage = func() { fmt.Fprint(stdout, pairUsage) }
	// Flags may come before or after the arguments.
	var pos []string
	rest := args[1:]
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		pos, rest = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	want := map[string]int{"approve": 1, "list": 0, "revoke": 2}
	n, ok := want[sub]
	if !ok || len(pos) != n {
		fmt.Fprintf(stderr, "gatehouse pair %s: wrong arguments\n\n%s", sub, pairUsage)
		return 2
	}
	cfg, err := loadConfig(*configFile, getenv)
	if err != nil {
		fmt.Fprintln(stderr, "gatehouse: configuration:", err)
		return 2
	}
	ctx := context.Background()
	st, err := openStore(ctx, cfg, newLogger(cfg, stderr))
	if err != nil {
		fmt.Fprintln(stderr, "gatehouse pair: open the database:", err)
		return 1
	}
	defer st.Close()
	admin := people.NewAdmin(st, nil)
	switch sub {
	case "approve":
		p, err := admin.Approve(ctx, pos[0], "cli"+whoRuns(getenv))
		if err != nil {
			fmt.Fprintln(stderr, "gatehouse pair approve:", gh.ErrorMessage(err), "("+string(gh.ErrorCode(err))+")")
			return 1
		}
		name := ""
		if p.UserName != "" {
			name = " (" + p.UserName + ")"
		}
		fmt.Fprintf(stdout, "approved %s: %s user %s%s is let in from their next message on\n", p.Code, p.Platform, p.UserID, name)
	case "revoke":
		if err := admin.Revoke(ctx, pos[0], pos[1]); err != nil {
			fmt.Fprintln(stderr, "gatehouse pair revoke:", gh.ErrorMessage(err), "("+string(gh.ErrorCode(err))+")")
			return 1
		}
		fmt.Fprintf(stdout, "revoked: %s user %s is a stranger again from their next message on\n", pos[0], pos[1])
	case "list":
		list, err := admin.List(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "gatehouse pair list:", err)
			return 1
		}
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PENDING CODE\tPLATFORM\tUSER\tNAME\tFIRST MESSAGE AT\tEXPIRES AT")
		for _, c := range list.Pending {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Code, c.Platform, c.UserID, c.UserName, c.Created.Format("2006-01-02 15:04 MST"), c.ExpiresAt.Format("2006-01-02 15:04 MST"))
		}
		fmt.Fprintln(tw, "\nLET IN\tPLATFORM\tUSER\tNAME\tAPPROVED AT\tBY")
		for _, p := range list.People {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", orDash(p.Code), p.Platform, p.UserID, p.UserName, p.Approved.Format("2006-01-02 15:04 MST"), p.ApprovedBy)
		}
		tw.Flush()
	}
	return 0
}

// whoRuns names the operating-system user running the command, for the
// record of who approved.
func whoRuns(getenv func(string) string) string {
	if u := getenv("USER"); u != "" {
		return ":" + u
	}
	if u := getenv("LOGNAME"); u != "" {
		return ":" + u
	}
	return ""
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
