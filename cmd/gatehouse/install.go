package main

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/store"
)

// installIDSecret is the store's name for this install's id.
const installIDSecret = "install-id"

// resolveInstallID is this install's id: random (80 bits from
// crypto/rand, lower-case base32), made at the first start and kept in
// the store, so every replica on one database and every restart use the
// same. It joins each Message-ID (tools.EmailConfig.InstallID): another
// install, or a fresh data directory, never repeats one of ours.
func resolveInstallID(ctx context.Context, st store.Secrets) (string, error) {
	b := make([]byte, 10)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate the install id: %w", err)
	}
	id := strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
	id, err := st.EnsureSecret(ctx, installIDSecret, id, time.Now())
	if err != nil {
		return "", fmt.Errorf("keep the install id in the store: %w", err)
	}
	return id, nil
}
