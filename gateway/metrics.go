package gateway

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/gateway/chat"
)

// metrics are the gateway's Prometheus series (the outbox registers its
// own). With no registerer they are still counted, just not exported.
type metrics struct {
	received  *prometheus.CounterVec
	receiveS  *prometheus.HistogramVec
	connected *prometheus.GaugeVec
	state     *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		received: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_receive_total",
			Help: "Platform updates received, by what became of them (outcome handed_on or dropped, and the drop reason)."},
			[]string{"platform", "outcome", "reason"}),
		receiveS: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gatehouse_receive_seconds",
			Help: "Time from an update's arrival to its commit (the platform is acknowledged after).", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)},
			[]string{"platform"}),
		connected: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gatehouse_platform_connected",
			Help: "1 while this replica holds the platform's lease and the last round trip to the platform succeeded."},
			[]string{"platform"}),
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gatehouse_platform_state",
			Help: "1 for the platform's current state on this replica (stopped, standby, connected, retrying), 0 for the others."},
			[]string{"platform", "state"}),
	}
	if reg != nil {
		reg.MustRegister(m.received, m.receiveS, m.connected, m.state)
	}
	return m
}

func (m *metrics) receive(platform string, r chat.ReceiveResult, since time.Time) {
	m.received.WithLabelValues(platform, r.Outcome, r.Reason).Inc()
	m.receiveS.WithLabelValues(platform).Observe(time.Since(since).Seconds())
}
