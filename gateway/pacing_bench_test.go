package gateway_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/store"
)

// BenchmarkTelegramSendPacing sends through a Telegram fake that enforces
// Telegram's limits (1 message/s per chat, 20/min per group, 30/s overall)
// with 429s: 40 private chats × 5 messages and 2 groups × 6, all queued at
// once. It reports the share of sends answered 429 (goal ≤ 1%) and how
// many messages were lost (goal 0).
//
//	go test -run XXX -bench SendPacing -benchtime 1x ./gateway/
func BenchmarkTelegramSendPacing(b *testing.B) {
	for range b.N {
		e, fake := telegramEnv(b, telegramtest.TelegramOptions{RateLimit: true}, stacktest.EnvOptions{})
		type chat struct {
			handle string
			n      int
		}
		var chats []chat
		for i := range 40 {
			chats = append(chats, chat{fmt.Sprintf("user%02d", i), 5})
		}
		chats = append(chats, chat{"group-a", 6}, chat{"group-b", 6})
		sessions := map[string]string{}
		for _, c := range chats {
			sessions[c.handle] = session(e, c.handle)
		}
		b.ResetTimer()
		before := len(fake.Throttled())
		sends := 0
		for _, c := range chats {
			var msgs []string
			for j := range c.n {
				msgs = append(msgs, fmt.Sprintf("%s message %d", c.handle, j))
			}
			sends += len(msgs)
			enqueue(e, sessions[c.handle], msgs...)
		}
		deadline := time.Now().Add(3 * time.Minute)
		for {
			pending, _ := e.Store.ListOutbox(e.Ctx, store.OutboxFilter{State: store.OutboxPending, Limit: 1000})
			sending, _ := e.Store.ListOutbox(e.Ctx, store.OutboxFilter{State: store.OutboxSending, Limit: 1000})
			if len(pending)+len(sending) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		b.StopTimer()
		lost := 0
		for _, c := range chats {
			got := texts(fake, c.handle)
			for j := range c.n {
				if !slicesContains(got, fmt.Sprintf("%s message %d", c.handle, j)) {
					lost++
				}
			}
		}
		throttled := len(fake.Throttled()) - before
		b.ReportMetric(float64(throttled)/float64(sends)*100, "429-%")
		b.ReportMetric(float64(lost), "lost")
		b.ReportMetric(float64(sends), "sends")
	}
}
