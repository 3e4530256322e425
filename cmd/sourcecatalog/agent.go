package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
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
		"[--receiver-v2[=auto|off]] [--timeout D] [--interval D] [--cut greedy|content-defined] [--log-format text|json]",
	summary: "run the on-board loop: discover, commit, publish, every interval",
	help:    helpText("agent"),
	run:     runAgent,
}

func runAgent(e *env, c *command, args []string) int {
	pf, sf := newPublishFlags(), newSignalkFlags()
	interval := durationFlag{d: agent.DefaultInterval}
	var (
		logFormat logFormatFlag
		cut       cutFlag
	)
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	pf.register(fs)
	sf.register(fs)
	fs.Var(&interval, "interval", "")
	fs.Var(&logFormat, "log-format", "")
	fs.Var(&cut, "cut", "")
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
	// that poisons it, as serve's store does; but a file removed or
	// replaced under it ends the agent, which a restart opens anew.
	src, replaced := pf.store.outboxSource(), error(nil)
	ctx, stopReplaced := context.WithCancelCause(ctx)
	if pf.store.newFile() {
		logger.Warn("creating the outbox: no file at the path (a first start, or a lost store: SPEC.md §2.4 floors the revisions by the clock)", "store", src.Name)
	}
	observe := receiver.Log{Logger: logger}.Store
	h, err := storeheal.OpenOutbox(ctx, src, storeheal.WithObserver(func(st storeheal.Status) {
		observe(st)
		if st.State == storeheal.Poisoned && errors.Is(st.Cause, storeheal.ErrReplaced) {
			stopReplaced(st.Cause)
		}
	}))
	if err != nil {
		return c.failf(e, "opening the store: %v", err)
	}
	cfg := pf.config(storeheal.Outbox(h, func(s outbox.Store) outbox.Store { return s }))
	cfg.Discoverer, cfg.Interval, cfg.Logger, cfg.Settle = discoverer, interval.d, logger, sf.settleTime()
	cfg.Build = cut.options()
	cfg.Wake = discoverer.Watch(ctx, signalk.WatchOptions{OnError: func(err error) {
		logger.Debug("delta stream", "error", err.Error())
	}})
	a, err := agent.New(cfg)
	if err != nil {
		err = errors.New(configErr(err))
	} else {
		err = a.Run(ctx)
		a.Close()
		if replaced = context.Cause(ctx); !errors.Is(replaced, storeheal.ErrReplaced) {
			replaced = nil
		}
	}
	if replaced != nil {
		err = fmt.Errorf("%v: restart the agent to open the file now at the path (or create it anew)", replaced)
	}
	if cerr := h.Close(); cerr != nil && err == nil {
		return c.failf(e, "closing %s: %v", src.Name, cerr)
	}
	if err != nil {
		return c.failf(e, "%v", err)
	}
	return exitOK
}
