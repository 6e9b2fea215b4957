package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// service is what the run group starts and drains: every long-running part
// of the gateway (HTTP, workers, gateway, gate sweeper, memory jobs).
type service interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// runGroup starts services in order and stops them in reverse order, so
// each stops before what it depends on: the HTTP server stops taking
// requests before the workers stop, the workers before the gateway that
// delivers their answers, and all of them before the store closes. Every
// goroutine a service starts is its own to wait for in Stop.
type runGroup struct {
	log     *slog.Logger
	names   []string
	members []service
	started int
}

// add appends a service; it starts after those added before it.
func (g *runGroup) add(name string, s service) {
	g.names = append(g.names, name)
	g.members = append(g.members, s)
}

// start starts every service in order. When one fails, those already
// started are stopped, in reverse, before the error is returned: nothing
// is left running behind a failed start.
func (g *runGroup) start(ctx context.Context) error {
	for i, s := range g.members {
		if err := s.Start(ctx); err != nil {
			err = fmt.Errorf("start %s: %w", g.names[i], err)
			if stopErr := g.stop(context.WithoutCancel(ctx)); stopErr != nil {
				err = errors.Join(err, stopErr)
			}
			return err
		}
		g.started = i + 1
	}
	return nil
}

// stop stops the started services in reverse order, each given what is
// left of ctx, and reports those that did not stop in time. Every service
// is asked to stop even when one before it failed.
func (g *runGroup) stop(ctx context.Context) error {
	var errs []error
	for i := g.started - 1; i >= 0; i-- {
		if err := g.members[i].Stop(ctx); err != nil {
			g.log.Warn("did not stop in time", "service", g.names[i], "err", err)
			errs = append(errs, fmt.Errorf("stop %s: %w", g.names[i], err))
		}
	}
	g.started = 0
	return errors.Join(errs...)
}
