package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"os/signal"
	"syscall"

	"github.com/yachtmemory/sourcecatalog/agent"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/receiver"
	"github.com/yachtmemory/sourcecatalog/signalk"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

var agentCommand = &command{
	name: "agent",
	synopsis: "--signalk URL [--signalk-token-file FILE] [--signalk-ca FILE] [--selection S] [--settle D] [--max-age D] " +
		"--store sqlite:FILE|mysql:DSN --vessel UUID --url URL [--ca FILE] [--cert FILE --key FILE | --token-file FILE] " +
		"[--receiver-v2[=auto|off]] [--timeout D] [--interval D] [--log-format text|json]",
	summary: "run the on-board loop: discover, commit, publish, every interval",
	help:    helpText("agent"),
	run:     runAgent,
}

func runAgent(e *env, c *command, args []string) int {
	pf, sf := newPublishFlags(), newSignalkFlags()
	interval := durationFlag{d: agent.DefaultInterval}
	var logFormat logFormatFlag
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	pf.register(fs)
	sf.register(fs)
	fs.Var(&interval, "interval", "")
	fs.Var(&logFormat, "log-format", "")
	operands, status, ok := c.parse(e, fs, args)
	if !ok {
		return status
	}
	if msg := sf.check(); msg != "" {
		return c.usageError(e, "%s", msg)
	}
	if msg := pf.check(c.name, operands); msg != "" {
		return c.usageError(e, "%s", msg)
	}
	discoverer, err := sf.client()
	if err != nil {
		return c.failf(e, "%v", err)
	}
	logger := logFormat.logger(e.stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A long-running process: the outbox heals itself after a failure
	// that poisons it, as serve's store does.
	src := pf.store.outboxSource()
	h, err := storeheal.OpenOutbox(ctx, src, storeheal.WithObserver(receiver.Log{Logger: logger}.Store))
	if err != nil {
		return c.failf(e, "opening the store: %v", err)
	}
	cfg := pf.config(storeheal.Outbox(h, func(s outbox.Store) outbox.Store { return s }))
	cfg.Discoverer, cfg.Interval, cfg.Logger = discoverer, interval.d, logger
	cfg.Wake = discoverer.Watch(ctx, signalk.WatchOptions{OnError: func(err error) {
		logger.Debug("delta stream", "error", err.Error())
	}})
	a, err := agent.New(cfg)
	if err != nil {
		err = errors.New(configErr(err))
	} else {
		err = a.Run(ctx)
		a.Close()
	}
	if cerr := h.Close(); cerr != nil && err == nil {
		return c.failf(e, "closing %s: %v", src.Name, cerr)
	}
	if err != nil {
		return c.failf(e, "%v", err)
	}
	return exitOK
}
