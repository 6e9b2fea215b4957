package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// scrapeCollector reads the gauges at scrape time: one store read
// (Config.Queue) and the incidents hook.
type scrapeCollector struct {
	cfg                             Config
	queued, oldest, incidents       *prometheus.Desc
	outboxOpen, outboxLag, scrapeOK *prometheus.Desc
}

func newScrapeCollector(cfg Config) *scrapeCollector {
	return &scrapeCollector{cfg: cfg,
		queued: prometheus.NewDesc("gatehouse_runs_queued",
			"Runs waiting for a worker (queued, a retry's backoff included).", nil, nil),
		oldest: prometheus.NewDesc("gatehouse_runs_oldest_queued_age_seconds",
			"How long the oldest claimable queued run has waited; 0 when none waits.", nil, nil),
		outboxOpen: prometheus.NewDesc("gatehouse_outbox_unsent",
			"Outbox rows not yet sent (pending or sending), by platform.", []string{"platform"}, nil),
		outboxLag: prometheus.NewDesc("gatehouse_outbox_lag_seconds",
			"Age of the oldest unsent outbox row, by platform.", []string{"platform"}, nil),
		incidents: prometheus.NewDesc("gatehouse_incidents_open",
			"Incidents open (stuck turns reported to an operator); 0 until incidents exist.", nil, nil),
		scrapeOK: prometheus.NewDesc("gatehouse_metrics_store_read_ok",
			"1 when the scrape-time store read answered, 0 when it failed (the queue series are then left out).", nil, nil),
	}
}

func (c *scrapeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.queued, c.oldest, c.outboxOpen, c.outboxLag, c.incidents, c.scrapeOK} {
		ch <- d
	}
}

func (c *scrapeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ScrapeTimeout)
	defer cancel()
	now := c.cfg.Now()
	if c.cfg.Queue != nil {
		q, err := c.cfg.Queue.QueueStats(ctx)
		ok := 1.0
		if err != nil {
			ok = 0
			c.cfg.Logger.Warn("metrics: queue read failed", "err", err)
		} else {
			ch <- prometheus.MustNewConstMetric(c.queued, prometheus.GaugeValue, float64(q.Queued))
			age := 0.0
			if !q.OldestAvailable.IsZero() {
				age = max(now.Sub(q.OldestAvailable).Seconds(), 0)
			}
			ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, age)
			for _, o := range q.Outbox {
				ch <- prometheus.MustNewConstMetric(c.outboxOpen, prometheus.GaugeValue, float64(o.Open), o.Platform)
				ch <- prometheus.MustNewConstMetric(c.outboxLag, prometheus.GaugeValue, max(now.Sub(o.Oldest).Seconds(), 0), o.Platform)
			}
		}
		ch <- prometheus.MustNewConstMetric(c.scrapeOK, prometheus.GaugeValue, ok)
	}
	n := 0
	if c.cfg.Incidents != nil {
		var err error
		if n, err = c.cfg.Incidents(ctx); err != nil {
			c.cfg.Logger.Warn("metrics: incidents read failed", "err", err)
			return
		}
	}
	ch <- prometheus.MustNewConstMetric(c.incidents, prometheus.GaugeValue, float64(n))
}

// openedGates remembers when the gates this process saw open were opened,
// up to a bound (the oldest forgotten first), until their decision.
type openedGates struct {
	mu   sync.Mutex
	at   map[string]time.Time
	ring []string
	next int
}

func newOpenedGates(n int) openedGates {
	return openedGates{at: map[string]time.Time{}, ring: make([]string, n)}
}

func (o *openedGates) put(id string, at time.Time) {
	if id == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.at[id]; ok {
		return
	}
	if old := o.ring[o.next]; old != "" {
		delete(o.at, old)
	}
	o.ring[o.next], o.at[id] = id, at
	o.next = (o.next + 1) % len(o.ring)
}

func (o *openedGates) take(id string) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	at, ok := o.at[id]
	delete(o.at, id)
	return at, ok
}
