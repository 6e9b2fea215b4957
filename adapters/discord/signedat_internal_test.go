package discord

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// The window is five minutes either way, and a timestamp that is not unix
// seconds is refused even when it is what was signed.
func TestSignedPingTimestampWindow(t *testing.T) {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_900_000_000, 0)
	a, err := New(Config{Token: "t", PublicKey: hex.EncodeToString(pub), Now: func() time.Time { return now },
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	h := a.Handler(nil) // a PING reaches no sink
	ping := []byte(`{"id":"1","application_id":"2","type":1,"token":"p","version":1}`)
	at := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).Unix(), 10) }
	for ts, want := range map[string]int{
		at(0): http.StatusOK, at(-299 * time.Second): http.StatusOK, at(299 * time.Second): http.StatusOK,
		at(-4 * time.Minute):   http.StatusOK,
		at(-301 * time.Second): http.StatusUnauthorized, at(301 * time.Second): http.StatusUnauthorized,
		at(-6 * time.Minute): http.StatusUnauthorized, at(6 * time.Minute): http.StatusUnauthorized,
		"0": http.StatusUnauthorized, "": http.StatusUnauthorized, "soon": http.StatusUnauthorized,
		at(0) + ".5": http.StatusUnauthorized, "99999999999999999999": http.StatusUnauthorized,
	} {
		r := httptest.NewRequest(http.MethodPost, "/hooks/discord", bytes.NewReader(ping))
		r.Header.Set("X-Signature-Timestamp", ts)
		r.Header.Set("X-Signature-Ed25519", hex.EncodeToString(ed25519.Sign(key, append([]byte(ts), ping...))))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("PING signed at %q: %d %q, want %d", ts, w.Code, w.Body, want)
		}
	}
}
