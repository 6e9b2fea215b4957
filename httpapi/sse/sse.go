package sse

import (
	"bufio"
	"encoding/json"
	"fmt"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
)

// WriteEvent writes a committed event, with its seq as the frame's id.
func WriteEvent(bw *bufio.Writer, e gh.Event) error {
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(bw, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Kind, data)
	return err
}

// WritePartial writes partial text, without an id: it is not committed,
// and a reconnect must not resume after it.
func WritePartial(bw *bufio.Writer, p kernel.Partial) error {
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(bw, "event: partial\ndata: %s\n\n", data)
	return err
}

// DrainPartials writes the partials already waiting, without blocking.
func DrainPartials(bw *bufio.Writer, ch <-chan kernel.Partial) error {
	for {
		select {
		case p := <-ch:
			if err := WritePartial(bw, p); err != nil {
				return err
			}
		default:
			return nil
		}
	}
}

// WritePing writes a comment, so proxies keep an idle stream open and
// clients notice a dead one.
func WritePing(bw *bufio.Writer) error {
	_, err := bw.WriteString(": ping\n\n")
	return err
}
