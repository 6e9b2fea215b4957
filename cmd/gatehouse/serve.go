package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/kernel"
)

// serve runs the gateway until SIGTERM or SIGINT, then drains: readiness
// turns 503, HTTP stops accepting and finishes requests in flight, and the
// store closes. A second signal stops at once.
func serve(ctx context.Context, cfg Config, log *slog.Logger) error {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)

	st, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer st.Close()
	k := kernel.New(st, kernelConfig(cfg))
	_ = k

	api := httpapi.New(httpapi.Config{Addr: cfg.Addr, Ready: []httpapi.Pinger{st}, Logger: log})
	if err := api.Start(ctx); err != nil {
		return err
	}
	log.Info("gatehouse started", "version", versionString(), "store", st.Dialect(), "addr", api.Addr())

	select {
	case sig := <-sigs:
		log.Info("draining", "signal", sig.String(), "timeout", cfg.DrainTimeout)
	case err := <-api.Done():
		return fmt.Errorf("http server: %w", err)
	}
	drainCtx, cancel := context.WithTimeout(context.Background(), cfg.DrainTimeout)
	defer cancel()
	go func() {
		select {
		case sig := <-sigs:
			log.Warn("second signal: stopping now", "signal", sig.String())
			os.Exit(1)
		case <-drainCtx.Done():
		}
	}()
	start := time.Now()
	if err := api.Stop(drainCtx); err != nil {
		log.Warn("drain timed out; connections cut", "err", err)
	}
	log.Info("drained", "took", time.Since(start).Round(time.Millisecond))
	return nil
}
