package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// Conformance of the memory rows: facts with one row per (user, subject)
// ordered by ObservedAt, their term index, vectors, and model-pass jobs.

func testMemory(t *testing.T, h Harness) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"SupersedeByObservedAt", testMemorySupersede},
		{"ForgetIsATombstone", testMemoryForget},
		{"ListsAndLookups", testMemoryLists},
		{"Postings", testMemoryPostings},
		{"Vectors", testMemoryVectors},
		{"BadInput", testMemoryBadInput},
		{"JobsOncePerTurn", testMemoryJobInsert},
		{"JobClaimAndLease", testMemoryJobClaim},
		{"BatchClaim", testMemoryBatchClaim},
		{"JobsClaimedOnce", testMemoryJobsClaimedOnce},
		{"FactsAndJobCommitTogether", testMemoryTx},
		{"SurvivesRestart", testMemoryRestart},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, h) })
	}
}

func memStore(t *testing.T, h Harness) store.Store {
	st := h.New(t)
	t.Cleanup(func() { st.Close() })
	return st
}

var memT0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func memFact(user, subject, text string, observed time.Time) store.MemoryFact {
	return store.MemoryFact{UserKey: user, Subject: subject, Kind: "note", Text: text, Value: "v:" + text, SourceSessionID: "s1",
		SourceSeq: 1, ObservedAt: observed, Created: memT0.Add(time.Hour)}
}

func memTerms(ws ...string) []store.MemoryTerm {
	var out []store.MemoryTerm
	for _, w := range ws {
		out = append(out, store.MemoryTerm{Term: w, TF: 1})
	}
	return out
}

func memPut(t *testing.T, w store.Writer, f store.MemoryFact, ts []store.MemoryTerm) (store.MemoryFact, bool) {
	t.Helper()
	got, ok, err := w.PutMemoryFact(context.Background(), f, ts)
	if err != nil {
		t.Fatalf("put %s: %v", f.Subject, err)
	}
	return got, ok
}

// memIndex is a user's counts and the postings of some terms.
type memIndex struct {
	store.MemoryStats
	Postings []store.MemoryPosting
}

func memPostings(t *testing.T, r store.Reader, user string, ts ...string) memIndex {
	t.Helper()
	st, err := r.MemoryTermStats(context.Background(), user, ts)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := r.MemoryPostings(context.Background(), user, ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		st.DF[p.Term]-- // each posting is one fact holding the term
	}
	for term, n := range st.DF {
		if n != 0 {
			t.Fatalf("df of %q is off by %d from its postings", term, n)
		}
	}
	return memIndex{MemoryStats: st, Postings: ps}
}

func memLive(t *testing.T, r store.Reader, user, prefix string) []store.MemoryFact {
	t.Helper()
	fs, err := r.MemoryFacts(context.Background(), user, prefix, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func testMemorySupersede(t *testing.T, h Harness) {
	st := memStore(t, h)
	ctx := context.Background()
	t1, t2 := memT0, memT0.Add(time.Minute)

	// In order: the newer observation replaces the row in place.
	a, ok := memPut(t, st, memFact("u1", "contact:sara", "old", t1), memTerms("old", "sara"))
	if !ok || a.ID == 0 || a.Deleted || !a.ObservedAt.Equal(t1) {
		t.Fatalf("first put %+v %v", a, ok)
	}
	b, ok := memPut(t, st, memFact("u1", "contact:sara", "new", t2), memTerms("new", "sara"))
	if !ok || b.ID != a.ID || b.Text != "new" {
		t.Fatalf("newer put %+v %v", b, ok)
	}
	// An older observation written later changes nothing.
	c, ok := memPut(t, st, memFact("u1", "contact:sara", "stale", t1), memTerms("stale"))
	if ok || c.Text != "new" || !c.ObservedAt.Equal(t2) {
		t.Fatalf("older put %+v %v", c, ok)
	}
	// The same instant: the later write refines it.
	d, ok := memPut(t, st, memFact("u1", "contact:sara", "refined", t2), memTerms("refined", "sara", "sara"))
	if !ok || d.ID != a.ID {
		t.Fatalf("same-instant put %+v %v", d, ok)
	}
	got, err := st.GetMemoryFact(ctx, a.ID)
	if err != nil || got.Text != "refined" || got.Value != "v:refined" || got.UserKey != "u1" || got.Kind != "note" || got.SourceSessionID != "s1" ||
		got.SourceSeq != 1 || !got.ObservedAt.Equal(t2) || !got.Created.Equal(memT0.Add(time.Hour)) || got.Deleted {
		t.Fatalf("stored %+v %v", got, err)
	}

	// Out of order: newest first, then the older one is refused.
	memPut(t, st, memFact("u2", "pref:language", "Spanish", t2), memTerms("spanish"))
	if got, ok := memPut(t, st, memFact("u2", "pref:language", "French", t1), memTerms("french")); ok || got.Text != "Spanish" {
		t.Fatalf("out of order: %+v %v", got, ok)
	}
	if fs := memLive(t, st, "u2", ""); len(fs) != 1 || fs[0].Text != "Spanish" {
		t.Fatalf("u2 facts %+v", fs)
	}
	// The index follows the kept version only.
	if idx := memPostings(t, st, "u1", "old", "new", "stale", "refined", "sara"); idx.Facts != 1 || idx.Terms != 3 || len(idx.Postings) != 2 {
		t.Fatalf("index %+v", idx)
	}
	if idx := memPostings(t, st, "u2", "french", "spanish"); idx.Facts != 1 || len(idx.Postings) != 1 || idx.Postings[0].Term != "spanish" {
		t.Fatalf("u2 index %+v", idx)
	}
}

func testMemoryForget(t *testing.T, h Harness) {
	st := memStore(t, h)
	ctx := context.Background()
	a, _ := memPut(t, st, memFact("u1", "pref:jazz", "likes jazz", memT0), memTerms("like", "jazz"))
	b, _ := memPut(t, st, memFact("u1", "note:car", "blue golf", memT0), memTerms("blue", "golf"))
	other, _ := memPut(t, st, memFact("u2", "pref:jazz", "likes jazz", memT0), memTerms("like", "jazz"))
	at := memT0.Add(time.Hour)
	gone, err := st.ForgetMemoryFacts(ctx, "u1", []int64{a.ID, other.ID, 999999}, at)
	if err != nil || len(gone) != 1 || gone[0].ID != a.ID || !gone[0].Deleted || !gone[0].DeletedAt.Equal(at) {
		t.Fatalf("forget %+v %v", gone, err)
	}
	if again, err := st.ForgetMemoryFacts(ctx, "u1", []int64{a.ID}, at.Add(time.Second)); err != nil || len(again) != 0 {
		t.Fatalf("forget twice %+v %v", again, err)
	}
	kept, err := st.GetMemoryFact(ctx, a.ID)
	if err != nil || !kept.Deleted || !kept.DeletedAt.Equal(at) || kept.Text != "likes jazz" {
		t.Fatalf("tombstone %+v %v", kept, err)
	}
	if fs := memLive(t, st, "u1", ""); len(fs) != 1 || fs[0].ID != b.ID {
		t.Fatalf("live %+v", fs)
	}
	if idx := memPostings(t, st, "u1", "jazz", "like", "golf"); idx.Facts != 1 || idx.Terms != 2 || len(idx.Postings) != 1 {
		t.Fatalf("index after forget %+v", idx)
	}
	if idx := memPostings(t, st, "u2", "jazz"); idx.Facts != 1 || len(idx.Postings) != 1 {
		t.Fatalf("u2 index %+v", idx)
	}
	// Observed before (or when) it was forgotten: stays forgotten.
	for _, obs := range []time.Time{memT0.Add(30 * time.Minute), at} {
		if got, ok := memPut(t, st, memFact("u1", "pref:jazz", "loves jazz", obs), memTerms("jazz")); ok || !got.Deleted {
			t.Fatalf("put observed %v over a tombstone: %+v %v", obs, got, ok)
		}
	}
	// Observed after: back, in the same row.
	got, ok := memPut(t, st, memFact("u1", "pref:jazz", "loves jazz", at.Add(time.Minute)), memTerms("love", "jazz"))
	if !ok || got.ID != a.ID || got.Deleted {
		t.Fatalf("revive %+v %v", got, ok)
	}
	if idx := memPostings(t, st, "u1", "jazz"); idx.Facts != 2 || idx.Terms != 4 || len(idx.Postings) != 1 {
		t.Fatalf("index after revive %+v", idx)
	}
}

func testMemoryLists(t *testing.T, h Harness) {
	st := memStore(t, h)
	ctx := context.Background()
	var ids []int64
	for i, s := range []string{"contact:sara", "contact:tom", "contacts", "name", "contact;", "note:x"} {
		f, _ := memPut(t, st, memFact("u1", s, s, memT0.Add(time.Duration(i)*time.Minute)), memTerms(fmt.Sprintf("w%d", i)))
		ids = append(ids, f.ID)
	}
	memPut(t, st, memFact("u2", "contact:zed", "zed", memT0), nil)
	all := memLive(t, st, "u1", "")
	if len(all) != 6 || all[0].Subject != "note:x" || all[5].Subject != "contact:sara" {
		t.Fatalf("all, newest first: %+v", all)
	}
	cs := memLive(t, st, "u1", "contact:")
	if len(cs) != 2 || cs[0].Subject != "contact:tom" || cs[1].Subject != "contact:sara" {
		t.Fatalf("prefix: %+v", cs)
	}
	if fs, err := st.MemoryFacts(ctx, "u1", "", 2); err != nil || len(fs) != 2 {
		t.Fatalf("limit: %+v %v", fs, err)
	}
	if _, err := st.ForgetMemoryFacts(ctx, "u1", []int64{ids[1]}, memT0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if cs := memLive(t, st, "u1", "contact:"); len(cs) != 1 {
		t.Fatalf("prefix after forget: %+v", cs)
	}
	zed := memLive(t, st, "u2", "")[0]
	byID, err := st.MemoryFactsByID(ctx, "u1", []int64{ids[0], ids[1], zed.ID, 424242})
	if err != nil || len(byID) != 1 || byID[0].ID != ids[0] {
		t.Fatalf("by id (live, own): %+v %v", byID, err)
	}
	if _, err := st.GetMemoryFact(ctx, 424242); !gh.IsCode(err, gh.CodeNotFound) {
		t.Fatalf("missing fact: %v", err)
	}
	if fs := memLive(t, st, "nobody", ""); len(fs) != 0 {
		t.Fatalf("nobody: %+v", fs)
	}
}

func testMemoryPostings(t *testing.T, h Harness) {
	st := memStore(t, h)
	a, _ := memPut(t, st, memFact("u1", "note:a", "a", memT0), []store.MemoryTerm{{Term: "sara", TF: 2}, {Term: "email", TF: 1}, {Term: "sara", TF: 1}})
	b, _ := memPut(t, st, memFact("u1", "note:b", "b", memT0), memTerms("sara", "tennis"))
	memPut(t, st, memFact("u1", "note:c", "c", memT0), nil)
	idx := memPostings(t, st, "u1", "sara", "email", "absent")
	if idx.Facts != 3 || idx.Terms != 6 || len(idx.Postings) != 3 {
		t.Fatalf("index %+v", idx)
	}
	got := map[string]store.MemoryPosting{}
	for _, p := range idx.Postings {
		got[fmt.Sprintf("%s/%d", p.Term, p.FactID)] = p
	}
	if p := got[fmt.Sprintf("sara/%d", a.ID)]; p.TF != 3 || p.Length != 4 {
		t.Fatalf("merged posting %+v", p)
	}
	if p := got[fmt.Sprintf("sara/%d", b.ID)]; p.TF != 1 || p.Length != 2 {
		t.Fatalf("posting %+v", p)
	}
	if idx := memPostings(t, st, "u1"); idx.Facts != 3 || len(idx.Postings) != 0 {
		t.Fatalf("no terms %+v", idx)
	}
	stats, err := st.MemoryTermStats(context.Background(), "u1", []string{"sara", "email", "tennis", "absent"})
	if err != nil || len(stats.DF) != 3 || stats.DF["sara"] != 2 || stats.DF["email"] != 1 || stats.DF["tennis"] != 1 || stats.Terms != 6 {
		t.Fatalf("term stats %+v %v", stats, err)
	}
	// also terms: read only for the facts holding one of the terms.
	c, _ := memPut(t, st, memFact("u1", "note:d", "d", memT0), memTerms("email", "tennis"))
	ps, err := st.MemoryPostings(context.Background(), "u1", []string{"sara"}, []string{"email", "absent"})
	if err != nil || len(ps) != 3 {
		t.Fatalf("postings with also %+v %v", ps, err)
	}
	for _, p := range ps {
		if p.FactID == c.ID || (p.Term == "email" && p.FactID != a.ID) {
			t.Fatalf("also postings of a fact without the terms: %+v", ps)
		}
	}
	if ps, err := st.MemoryPostings(context.Background(), "u1", nil, []string{"email"}); err != nil || len(ps) != 0 {
		t.Fatalf("no terms, only also: %+v %v", ps, err)
	}
	// Forgetting and superseding keep the document frequencies exact.
	if _, err := st.ForgetMemoryFacts(context.Background(), "u1", []int64{b.ID}, memT0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	memPut(t, st, memFact("u1", "note:d", "d2", memT0.Add(time.Minute)), memTerms("email"))
	stats, _ = st.MemoryTermStats(context.Background(), "u1", []string{"sara", "email", "tennis"})
	if len(stats.DF) != 2 || stats.DF["sara"] != 1 || stats.DF["email"] != 2 || stats.Facts != 3 || stats.Terms != 5 {
		t.Fatalf("term stats after forget and supersede %+v", stats)
	}
	memPostings(t, st, "u1", "sara", "email", "tennis")
	if idx := memPostings(t, st, "nobody", "sara"); idx.Facts != 0 || len(idx.Postings) != 0 {
		t.Fatalf("unknown user %+v", idx)
	}
}

func testMemoryVectors(t *testing.T, h Harness) {
	st := memStore(t, h)
	ctx := context.Background()
	a, _ := memPut(t, st, memFact("u1", "note:a", "first", memT0), memTerms("first"))
	b, _ := memPut(t, st, memFact("u1", "note:b", "second", memT0), memTerms("second"))
	vs, err := st.MemoryVectors(ctx, "u1", "m1")
	if err != nil || len(vs) != 2 || vs[0].FactID != a.ID || vs[0].Text != "first" || vs[0].Vector != nil || vs[1].Vector != nil {
		t.Fatalf("no vectors yet %+v %v", vs, err)
	}
	va, vb := []byte{1, 2, 3, 4}, []byte{5, 6, 7, 8}
	if err := st.SetMemoryVectors(ctx, []store.MemoryVector{
		{FactID: a.ID, Text: "first", Model: "m1", Vector: va},
		{FactID: b.ID, Text: "no longer its text", Model: "m1", Vector: vb},
	}); err != nil {
		t.Fatal(err)
	}
	vs, _ = st.MemoryVectors(ctx, "u1", "m1")
	if !bytes.Equal(vs[0].Vector, va) || vs[1].Vector != nil {
		t.Fatalf("after set %+v", vs)
	}
	if vs, _ := st.MemoryVectors(ctx, "u1", "m2"); vs[0].Vector != nil {
		t.Fatalf("another model's vector %+v", vs)
	}
	// A new version of the fact drops its vector.
	memPut(t, st, memFact("u1", "note:a", "first, revised", memT0.Add(time.Minute)), memTerms("first"))
	if vs, _ := st.MemoryVectors(ctx, "u1", "m1"); vs[0].Vector != nil || vs[0].Text != "first, revised" {
		t.Fatalf("after supersession %+v", vs)
	}
	if _, err := st.ForgetMemoryFacts(ctx, "u1", []int64{b.ID}, memT0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if vs, _ := st.MemoryVectors(ctx, "u1", "m1"); len(vs) != 1 {
		t.Fatalf("forgotten facts have no vectors %+v", vs)
	}
}

func testMemoryBadInput(t *testing.T, h Harness) {
	st := memStore(t, h)
	ctx := context.Background()
	for _, tc := range []struct {
		f  store.MemoryFact
		ts []store.MemoryTerm
	}{
		{memFact("", "note:a", "x", memT0), nil},
		{memFact("u1", "", "x", memT0), nil},
		{memFact("u1", "note:a", "x", memT0), []store.MemoryTerm{{Term: "two words", TF: 1}}},
		{memFact("u1", "note:a", "x", memT0), []store.MemoryTerm{{Term: "", TF: 1}}},
		{memFact("u1", "note:a", "x", memT0), []store.MemoryTerm{{Term: "w", TF: 0}}},
	} {
		if _, _, err := st.PutMemoryFact(ctx, tc.f, tc.ts); !gh.IsCode(err, gh.CodeInvalid) {
			t.Fatalf("put %+v %+v: %v", tc.f, tc.ts, err)
		}
	}
	if fs := memLive(t, st, "u1", ""); len(fs) != 0 {
		t.Fatalf("bad input wrote %+v", fs)
	}
}

func memJob(user, session string, seq int64) store.MemoryJob {
	return store.MemoryJob{UserKey: user, SessionID: session, Seq: seq, At: memT0, UserText: "hello " + session, AnswerText: "hi",
		State: store.MemoryJobQueued, MaxAttempts: 3, AvailableAt: memT0, Created: memT0, Updated: memT0}
}

func testMemoryJobInsert(t *testing.T, h Harness) {
	st := memStore(t, h)
	ctx := context.Background()
	a, ok, err := st.InsertMemoryJob(ctx, memJob("u1", "s1", 3))
	if err != nil || !ok || a.ID == 0 || a.UserText != "hello s1" || a.State != store.MemoryJobQueued || !a.At.Equal(memT0) {
		t.Fatalf("insert %+v %v %v", a, ok, err)
	}
	b, ok, err := st.InsertMemoryJob(ctx, memJob("u1", "s1", 3))
	if err != nil || ok || b.ID != a.ID {
		t.Fatalf("same turn again %+v %v %v", b, ok, err)
	}
	for _, j := range []store.MemoryJob{memJob("u1", "s1", 4), memJob("u2", "s1", 3), memJob("u1", "", 0), memJob("u1", "", 0)} {
		if _, ok, err := st.InsertMemoryJob(ctx, j); err != nil || !ok {
			t.Fatalf("insert %+v: %v %v", j, ok, err)
		}
	}
	js, err := st.ListMemoryJobs(ctx, "u1", "", 0)
	if err != nil || len(js) != 4 || js[0].ID != a.ID {
		t.Fatalf("list %+v %v", js, err)
	}
	if js, _ := st.ListMemoryJobs(ctx, "", store.MemoryJobQueued, 2); len(js) != 2 {
		t.Fatalf("list with limit %+v", js)
	}
	if _, err := st.GetMemoryJob(ctx, 424242); !gh.IsCode(err, gh.CodeNotFound) {
		t.Fatalf("missing job: %v", err)
	}
}

// memClaim claims a batch (every due group ready) and makes its jobs
// running with a lease, as the memory package does.
func memClaim(st store.Store, now time.Time, owner string, lease time.Duration) ([]store.MemoryJob, error) {
	return memClaimBatch(st, store.MemoryBatchClaim{Now: now, MinJobs: 1, IdleBefore: now, Limit: 20}, owner, lease)
}

func memClaimBatch(st store.Store, c store.MemoryBatchClaim, owner string, lease time.Duration) ([]store.MemoryJob, error) {
	var got []store.MemoryJob
	err := st.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		got = nil
		js, err := tx.ClaimMemoryBatch(ctx, c)
		if err != nil {
			return err
		}
		for _, j := range js {
			j.State, j.Attempts, j.Owner, j.AvailableAt, j.Updated = store.MemoryJobRunning, j.Attempts+1, owner, c.Now.Add(lease), c.Now
			if err := tx.UpdateMemoryJob(ctx, j); err != nil {
				return err
			}
			got = append(got, j)
		}
		return nil
	})
	return got, err
}

func testMemoryJobClaim(t *testing.T, h Harness) {
	st := memStore(t, h)
	ctx := context.Background()
	a, _, _ := st.InsertMemoryJob(ctx, memJob("u1", "s1", 1))
	later := memJob("u1", "s2", 1)
	later.AvailableAt = memT0.Add(time.Hour)
	b, _, _ := st.InsertMemoryJob(ctx, later)

	js, err := memClaim(st, memT0, "w1", time.Minute)
	if err != nil || len(js) != 1 || js[0].ID != a.ID {
		t.Fatalf("claim %+v %v", js, err)
	}
	if js, _ := memClaim(st, memT0.Add(30*time.Second), "w2", time.Minute); len(js) != 0 {
		t.Fatal("claimed a leased job, or one not yet due")
	}
	// The lease lapses: the job is claimable again.
	js, err = memClaim(st, memT0.Add(2*time.Minute), "w2", time.Minute)
	if err != nil || len(js) != 1 || js[0].ID != a.ID || js[0].Attempts != 2 || js[0].Owner != "w2" {
		t.Fatalf("reclaim %+v %v", js, err)
	}
	// Finish it; the later job comes due.
	err = st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		cur, err := tx.LockMemoryJob(ctx, a.ID)
		if err != nil {
			return err
		}
		cur.State, cur.Owner, cur.UserText, cur.AnswerText, cur.LastError = store.MemoryJobDone, "", "", "", "none"
		return tx.UpdateMemoryJob(ctx, cur)
	})
	if err != nil {
		t.Fatal(err)
	}
	done, _ := st.GetMemoryJob(ctx, a.ID)
	if done.State != store.MemoryJobDone || done.UserText != "" || done.LastError != "none" || done.Attempts != 2 {
		t.Fatalf("done %+v", done)
	}
	if js, _ := memClaim(st, memT0.Add(59*time.Minute), "w3", time.Minute); len(js) != 0 {
		t.Fatal("claimed a done job or one not yet due")
	}
	if js, _ := memClaim(st, memT0.Add(time.Hour), "w3", time.Minute); len(js) != 1 || js[0].ID != b.ID {
		t.Fatalf("due job %+v", js)
	}
	err = st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.LockMemoryJob(ctx, 424242)
		return err
	})
	if !gh.IsCode(err, gh.CodeNotFound) {
		t.Fatalf("lock missing job: %v", err)
	}
	// LockMemoryJobs: those that exist, by id.
	err = st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		js, err := tx.LockMemoryJobs(ctx, []int64{b.ID, 424242, a.ID})
		if err != nil {
			return err
		}
		if len(js) != 2 || js[0].ID != a.ID || js[1].ID != b.ID || js[1].Owner != "w3" {
			t.Errorf("lock jobs %+v", js)
		}
		if js, err := tx.LockMemoryJobs(ctx, nil); err != nil || len(js) != 0 {
			t.Errorf("lock no jobs %+v %v", js, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// memJobs queues n jobs of one user and session, created at created,
// seqs from seq0, and returns their ids.
func memJobs(t *testing.T, st store.Store, user, session string, seq0 int64, n int, created time.Time) []int64 {
	t.Helper()
	var ids []int64
	for i := range n {
		j := memJob(user, session, seq0+int64(i))
		j.Created, j.AvailableAt, j.At = created, created, created
		got, ok, err := st.InsertMemoryJob(context.Background(), j)
		if err != nil || !ok {
			t.Fatalf("insert %+v: %v %v", j, ok, err)
		}
		ids = append(ids, got.ID)
	}
	return ids
}

func jobIDs(js []store.MemoryJob) []int64 {
	var ids []int64
	for _, j := range js {
		ids = append(ids, j.ID)
	}
	return ids
}

// A batch is the due jobs of one (user, session), oldest first, from a
// group that has enough of them or has gone quiet.
func testMemoryBatchClaim(t *testing.T, h Harness) {
	st := memStore(t, h)
	ctx := context.Background()
	now := memT0.Add(10 * time.Minute)
	idle := now.Add(-2 * time.Minute)
	claim := store.MemoryBatchClaim{Now: now, MinJobs: 5, IdleBefore: idle, Limit: 20}

	// Three recent turns of u1 in s1 (the oldest jobs), five of u1 in s2,
	// four of u2 in s1 interleaved with them.
	few := memJobs(t, st, "u1", "s1", 1, 3, now.Add(-time.Minute))
	var five, other []int64
	for i := range 5 {
		five = append(five, memJobs(t, st, "u1", "s2", int64(i+1), 1, now.Add(-time.Minute))...)
		if i < 4 {
			other = append(other, memJobs(t, st, "u2", "s1", int64(i+1), 1, now.Add(-time.Minute))...)
		}
	}
	js, err := memClaimBatch(st, claim, "w1", 3*time.Minute)
	if err != nil || fmt.Sprint(jobIDs(js)) != fmt.Sprint(five) {
		t.Fatalf("claimed %v (%v), want the five of u1/s2 %v", jobIDs(js), err, five)
	}
	for _, j := range js {
		if j.UserKey != "u1" || j.SessionID != "s2" {
			t.Fatalf("a batch mixes groups: %+v", j)
		}
	}
	if js, _ := memClaimBatch(st, claim, "w2", time.Minute); len(js) != 0 {
		t.Fatalf("claimed %+v: no other group has five due jobs or is quiet", js)
	}
	// A fifth turn of u2 in s1 that is not due yet does not count.
	future := memJob("u2", "s1", 99)
	future.Created, future.AvailableAt = now.Add(-time.Minute), now.Add(time.Hour)
	if _, _, err := st.InsertMemoryJob(ctx, future); err != nil {
		t.Fatal(err)
	}
	if js, _ := memClaimBatch(st, claim, "w2", time.Minute); len(js) != 0 {
		t.Fatalf("claimed %+v: a job not yet due made the group ready", js)
	}
	// Time passes: both groups are quiet; the one holding the oldest job
	// goes first, then the other, without its job not yet due.
	claim.Now, claim.IdleBefore = now.Add(time.Minute), now.Add(-time.Minute)
	if js, err := memClaimBatch(st, claim, "w2", time.Minute); err != nil || fmt.Sprint(jobIDs(js)) != fmt.Sprint(few) {
		t.Fatalf("quiet group: claimed %v (%v), want %v", jobIDs(js), err, few)
	}
	if js, err := memClaimBatch(st, claim, "w2", time.Minute); err != nil || fmt.Sprint(jobIDs(js)) != fmt.Sprint(other) {
		t.Fatalf("quiet group: claimed %v (%v), want %v", jobIDs(js), err, other)
	}
	// A lapsed lease makes the running jobs due again, as a batch.
	claim.Now, claim.IdleBefore = now.Add(5*time.Minute), idle
	if js, err := memClaimBatch(st, claim, "w3", time.Minute); err != nil || len(js) != 5 || js[0].UserKey != "u1" || js[0].Attempts != 2 {
		t.Fatalf("lapsed: claimed %+v (%v)", js, err)
	}

	// Limit (on a store of its own): 23 waiting turns give a batch of 20;
	// the 3 left wait.
	st = memStore(t, h)
	big := memJobs(t, st, "u3", "s3", 1, 23, claim.Now.Add(-time.Second))
	claim.IdleBefore = claim.Now.Add(-2 * time.Minute)
	if js, err := memClaimBatch(st, claim, "w4", time.Minute); err != nil || fmt.Sprint(jobIDs(js)) != fmt.Sprint(big[:20]) {
		t.Fatalf("limit: claimed %v (%v), want %v", jobIDs(js), err, big[:20])
	}
	if js, _ := memClaimBatch(st, claim, "w4", time.Minute); len(js) != 0 {
		t.Fatalf("claimed the remainder %+v before it was ready", jobIDs(js))
	}
	// A limit below MinJobs: a full batch is ready.
	small := store.MemoryBatchClaim{Now: claim.Now, MinJobs: 5, IdleBefore: claim.IdleBefore, Limit: 2}
	if js, err := memClaimBatch(st, small, "w5", time.Minute); err != nil || fmt.Sprint(jobIDs(js)) != fmt.Sprint(big[20:22]) {
		t.Fatalf("limit 2: claimed %v (%v), want %v", jobIDs(js), err, big[20:22])
	}
}

// Claimers in parallel (goroutines, and on Postgres other replicas) never
// get the same job, every job is claimed, and every batch is one group.
func testMemoryJobsClaimedOnce(t *testing.T, h Harness) {
	st := memStore(t, h)
	ctx := context.Background()
	const groups, per = 12, 7
	for i := range per {
		for g := range groups {
			memJobs(t, st, fmt.Sprintf("u%d", g%4), fmt.Sprintf("s%d", g), int64(i+1), 1, memT0)
		}
	}
	const n = groups * per
	stores := []store.Store{st, st, st, st, st, st}
	if h.Peer != nil {
		for range 3 {
			p := h.Peer(t, st)
			t.Cleanup(func() { p.Close() })
			stores = append(stores, p)
		}
	}
	var mu sync.Mutex
	claimed := map[int64]string{}
	run := func(w int, s store.Store, c store.MemoryBatchClaim) {
		for {
			js, err := memClaimBatch(s, c, fmt.Sprintf("w%d", w), time.Hour)
			if err != nil {
				t.Error(err)
				return
			}
			if len(js) == 0 {
				return
			}
			mu.Lock()
			if len(js) > c.Limit || len(js) < c.MinJobs && c.IdleBefore.Before(memT0) {
				t.Errorf("a batch of %d jobs (ready at %d, at most %d)", len(js), c.MinJobs, c.Limit)
			}
			for _, j := range js {
				if prev, dup := claimed[j.ID]; dup {
					t.Errorf("job %d claimed by %s and w%d", j.ID, prev, w)
				}
				claimed[j.ID] = fmt.Sprintf("w%d", w)
				if j.UserKey != js[0].UserKey || j.SessionID != js[0].SessionID {
					t.Errorf("a batch mixes groups: %+v and %+v", js[0], j)
				}
			}
			mu.Unlock()
		}
	}
	// Batches of at most 3, ready at 2: every group gives a few, and the
	// claimers meet on the same groups.
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w, s := range stores {
		wg.Go(func() {
			<-start
			run(w, s, store.MemoryBatchClaim{Now: memT0, MinJobs: 2, IdleBefore: memT0.Add(-time.Hour), Limit: 3})
		})
	}
	close(start)
	wg.Wait()
	// Each group of 7 gives at least 3 + 3 (or 3 + 2 + 2, when two
	// claimers took turns over its rows); a last job alone is not ready.
	if len(claimed) < groups*6 || len(claimed) > n {
		t.Fatalf("%d of %d jobs claimed", len(claimed), n)
	}
	if js, _ := st.ListMemoryJobs(ctx, "", store.MemoryJobRunning, 0); len(js) != len(claimed) {
		t.Fatalf("%d running, %d claimed", len(js), len(claimed))
	}
	// Quiet now: what is left goes too, each job once.
	for w, s := range stores {
		wg.Go(func() { run(w, s, store.MemoryBatchClaim{Now: memT0, MinJobs: 2, IdleBefore: memT0, Limit: 3}) })
	}
	wg.Wait()
	if len(claimed) != n {
		t.Fatalf("%d of %d jobs claimed", len(claimed), n)
	}
}

func testMemoryTx(t *testing.T, h Harness) {
	st := memStore(t, h)
	ctx := context.Background()
	boom := errors.New("boom")
	err := st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if _, _, err := tx.PutMemoryFact(ctx, memFact("u1", "name", "Ana", memT0), memTerms("ana")); err != nil {
			return err
		}
		if _, _, err := tx.InsertMemoryJob(ctx, memJob("u1", "s1", 1)); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("InTx: %v", err)
	}
	if fs := memLive(t, st, "u1", ""); len(fs) != 0 {
		t.Fatalf("rolled-back fact kept %+v", fs)
	}
	if js, _ := st.ListMemoryJobs(ctx, "u1", "", 0); len(js) != 0 {
		t.Fatalf("rolled-back job kept %+v", js)
	}
	if idx := memPostings(t, st, "u1", "ana"); idx.Facts != 0 || len(idx.Postings) != 0 {
		t.Fatalf("rolled-back index kept %+v", idx)
	}
	err = st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if _, _, err := tx.PutMemoryFact(ctx, memFact("u1", "name", "Ana", memT0), memTerms("ana")); err != nil {
			return err
		}
		_, _, err := tx.InsertMemoryJob(ctx, memJob("u1", "s1", 1))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if fs := memLive(t, st, "u1", ""); len(fs) != 1 {
		t.Fatalf("committed facts %+v", fs)
	}
	if js, _ := st.ListMemoryJobs(ctx, "u1", "", 0); len(js) != 1 {
		t.Fatalf("committed jobs %+v", js)
	}
}

func testMemoryRestart(t *testing.T, h Harness) {
	st := h.New(t)
	ctx := context.Background()
	f, _ := memPut(t, st, memFact("u1", "name", "Ana", memT0), memTerms("ana"))
	j, _, err := st.InsertMemoryJob(ctx, memJob("u1", "s1", 1))
	if err != nil {
		t.Fatal(err)
	}
	st = h.Reopen(t, st)
	t.Cleanup(func() { st.Close() })
	if got, err := st.GetMemoryFact(ctx, f.ID); err != nil || got.Text != "Ana" {
		t.Fatalf("fact after restart %+v %v", got, err)
	}
	if got, err := memClaim(st, memT0, "w", time.Minute); err != nil || len(got) != 1 || got[0].ID != j.ID || got[0].UserText != "hello s1" {
		t.Fatalf("job after restart %+v %v", got, err)
	}
	if idx := memPostings(t, st, "u1", "ana"); idx.Facts != 1 || len(idx.Postings) != 1 {
		t.Fatalf("index after restart %+v", idx)
	}
}
