package postgres_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/kernel"
)

// A stream on one replica follows a session; what another replica commits
// to it arrives with its events (no read), the same events a read would
// give. A commit too big for a notification arrives as a signal to read.
// A session nobody else follows sends no notification at all.
func TestOtherReplicasCommitsReachAFollowedSessionWithoutARead(t *testing.T) {
	u := testenv.PostgresURL(t)
	a, b := open(t, u), open(t, u)
	defer a.Close()
	defer b.Close()
	ka, kb := kernel.New(a, kernel.Config{}), kernel.New(b, kernel.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, _, err := ka.CreateSession(ctx, gh.Session{ID: "s1"}); err != nil {
		t.Fatal(err)
	}
	listener, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(context.Background())
	if _, err := listener.Exec(ctx, "LISTEN "+pgx.Identifier{"wake_" + testenv.SchemaOf(u) + "_ev"}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	message := func(k *kernel.Kernel, text string) kernel.Committed {
		t.Helper()
		p, _ := json.Marshal(gh.UserMessage{Text: text, Delivery: gh.DeliveryQueue})
		c, err := k.EdgeCommit(ctx, kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: p}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	message(ka, "before anyone follows")

	sub := kb.SubscribeCommits("s1")
	defer sub.Close()
	release, err := kb.Follow(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	after := message(ka, "after the follow")

	// Notifications on a channel arrive in commit order: the first one is
	// the followed commit's, so the earlier commit sent none.
	n, err := listener.WaitForNotification(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(n.Payload, "after the follow") || strings.Contains(n.Payload, "before anyone follows") {
		t.Fatalf("first notification %s", n.Payload)
	}

	// received waits for b's subscription and checks that what it got is
	// exactly what b reads from the store after cursor.
	received := func(cursor int64, wantComplete bool) int64 {
		t.Helper()
		select {
		case <-sub.Committed:
		case <-ctx.Done():
			t.Fatal("no signal on the other replica")
		}
		got, complete := sub.Take()
		if complete != wantComplete {
			t.Fatalf("complete %v, want %v (events %d)", complete, wantComplete, len(got))
		}
		read, err := b.Events(ctx, "s1", cursor, 100)
		if err != nil {
			t.Fatal(err)
		}
		if !complete {
			return read[len(read)-1].Seq
		}
		if len(got) != len(read) {
			t.Fatalf("relayed %d events, the store has %d after %d", len(got), len(read), cursor)
		}
		for i := range got {
			g, r := got[i], read[i]
			// The payload may differ in whitespace only (JSON travels
			// compacted).
			if g.SessionID != r.SessionID || g.Seq != r.Seq || g.Kind != r.Kind || g.Key != r.Key || compact(t, g.Payload) != compact(t, r.Payload) || !g.CreatedAt.Equal(r.CreatedAt) {
				t.Fatalf("relayed %+v\nstore   %+v", g, r)
			}
		}
		return read[len(read)-1].Seq
	}
	cursor := received(after.Event.Seq-1, true)

	// A claim (run.started) and a leased commit on a, in transactions.
	lease, ok, err := ka.Claim(ctx, "worker-a")
	if err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	cursor = received(cursor, true)
	answer, _ := json.Marshal(gh.AssistantMessage{GenerationID: "g1", Text: "an answer", InputSeqs: []int64{after.Event.Seq}, StopReason: gh.StopEndTurn})
	notice, _ := json.Marshal(gh.Notice{Text: "and a notice"})
	if _, err := ka.Commit(ctx, lease, gh.NewEvent{Kind: gh.KindAssistantMessage, Payload: answer, Key: "g1"}, gh.NewEvent{Kind: gh.KindNotice, Payload: notice}); err != nil {
		t.Fatal(err)
	}
	cursor = received(cursor, true)

	// Too big for a notification: a signal, and the stream reads.
	big, _ := json.Marshal(gh.Notice{Text: strings.Repeat("x", 9000)})
	if _, err := ka.Commit(ctx, lease, gh.NewEvent{Kind: gh.KindNotice, Payload: big}); err != nil {
		t.Fatal(err)
	}
	received(cursor, false)
}

func compact(t *testing.T, raw []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("payload %q: %v", raw, err)
	}
	return b.String()
}

// A stream opened and closed writes nothing (#32): a replica keeps one row
// however many sessions it streams, so a client that opens a stream for
// every turn costs no transaction per turn.
func TestStreamsOfManySessionsKeepOneRowPerReplica(t *testing.T) {
	u := testenv.PostgresURL(t)
	b := open(t, u)
	defer b.Close()
	kb := kernel.New(b, kernel.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows := func() (n int, sessions []string) {
		t.Helper()
		r, err := conn.Query(ctx, `SELECT session_id FROM stream_followers`)
		if err != nil {
			t.Fatal(err)
		}
		ss, err := pgx.CollectRows(r, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return len(ss), ss
	}
	var xmin, current int64
	for i := range 20 {
		release, err := kb.Follow(ctx, fmt.Sprintf("s%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			// Transactions from here on: none is a follower's.
			if err := conn.QueryRow(ctx, `SELECT xmin::text::bigint, pg_current_xact_id()::text::bigint FROM stream_followers`).Scan(&xmin, &current); err != nil {
				t.Fatal(err)
			}
		}
		release()
	}
	if n, ss := rows(); n != 1 || ss[0] != "*" {
		t.Fatalf("stream_followers after 20 streams on 20 sessions: %v, want one row for the replica", ss)
	}
	var now int64
	if err := conn.QueryRow(ctx, `SELECT xmin::text::bigint FROM stream_followers`).Scan(&now); err != nil || now != xmin {
		t.Fatalf("the replica's row was rewritten by a stream (xmin %d, then %d): %v", xmin, now, err)
	}
}
