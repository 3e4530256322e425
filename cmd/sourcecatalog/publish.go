package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/agent"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

var publishCommand = &command{
	name:     "publish",
	synopsis: "--store sqlite:FILE|mysql:DSN --vessel UUID --url URL [--ca FILE] [--cert FILE --key FILE | --token-file FILE] [--receiver-v2[=auto|off]] [--timeout D] [--give-up-after D] [--json]",
	summary:  "post the outbox's pending entries to a serve URL until delivered",
	help:     helpText("publish"),
	run:      runPublish,
}

// publishBackoff is the wait after a pass with failures: min, doubling up
// to max. Tests shorten it.
var publishBackoff = struct{ min, max time.Duration }{time.Second, 30 * time.Second}

// publishFlags are publish's flags.
type publishFlags struct {
	store                    storeFlag
	vessel                   uuidFlag
	endpoint                 stringFlag
	ca, cert, key, tokenFile stringFlag
	receiverV2               gateFlag
	asJSON                   boolFlag
	timeout, giveUp          durationFlag
}

func runPublish(e *env, c *command, args []string) int {
	f := newPublishFlags()
	f.giveUp = durationFlag{d: 10 * time.Minute}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	f.register(fs)
	fs.Var(&f.giveUp, "give-up-after", "")
	fs.Var(&f.asJSON, "json", "")
	operands, status, ok := c.parse(e, fs, args)
	if !ok {
		return status
	}
	if msg := f.check(c.name, operands); msg != "" {
		return c.usageError(e, "%s", msg)
	}
	return withStores(e, c, &f.store, storeOptions{outbox: true}, func(ctx context.Context, st *stores) int {
		return publish(ctx, e, c, &f, st)
	})
}

// newPublishFlags returns the flags with their defaults.
func newPublishFlags() publishFlags {
	return publishFlags{vessel: uuidFlag{check: notNil}, timeout: durationFlag{d: httpbinding.DefaultClientTimeout}}
}

// register registers the flags of the outbox and the receiver, which
// publish and agent share.
func (f *publishFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.store, "store", "")
	fs.Var(&f.vessel, "vessel", "")
	fs.Var(&f.endpoint, "url", "")
	fs.Var(&f.ca, "ca", "")
	fs.Var(&f.cert, "cert", "")
	fs.Var(&f.key, "key", "")
	fs.Var(&f.tokenFile, "token-file", "")
	fs.Var(&f.receiverV2, "receiver-v2", "")
	fs.Var(&f.timeout, "timeout", "")
}

// check returns what is wrong with command name's command line, or "".
func (f *publishFlags) check(name string, operands []string) string {
	u, err := url.Parse(f.endpoint.s)
	switch {
	case len(operands) > 0:
		return fmt.Sprintf("unexpected argument %q: %s takes no arguments", operands[0], name)
	case f.store.kind == "":
		return "--store is required"
	case f.store.kind == "memory":
		return "--store memory keeps no outbox across runs: use sqlite:FILE or mysql:DSN"
	case !f.vessel.set:
		return "--vessel is required"
	case !f.endpoint.set:
		return "--url is required"
	case err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.Fragment != "":
		return "--url must be an https URL without user or fragment"
	case f.cert.set != f.key.set:
		return "--cert and --key go together"
	case f.tokenFile.set && f.cert.set:
		return "--token-file and --cert/--key exclude each other: give one kind of credentials"
	}
	return ""
}

// config returns the sender's configuration the flags describe, over
// the outbox store.
func (f *publishFlags) config(store outbox.Store) agent.Config {
	return agent.Config{
		Vessel: f.vessel.id, Store: store, URL: f.endpoint.s, CAFile: f.ca.s,
		CertFile: f.cert.s, KeyFile: f.key.s, TokenFile: f.tokenFile.s,
		Timeout: f.timeout.d, Gate: f.receiverV2.gate,
	}
}

// configFlags are the flags behind agent.Config's fields.
var configFlags = map[string]string{
	"URL": "--url", "CAFile": "--ca", "CertFile": "--cert and --key", "KeyFile": "--cert and --key", "TokenFile": "--token-file",
}

// configErr renders an error of agent.NewSender naming the flag at fault.
// It never holds a token: NewSender's errors name files, not contents.
func configErr(err error) string {
	var se *sourcecatalog.Error
	if !errors.As(err, &se) || configFlags[se.Field] == "" {
		return located(err)
	}
	why := strings.TrimPrefix(strings.TrimPrefix(se.Detail, "agent: "), "httpbinding: ")
	if se.Err != nil {
		why = se.Err.Error()
	}
	return configFlags[se.Field] + ": " + why
}

// publishJSON is publish's report, and its --json output.
type publishJSON struct {
	VesselID          uuid.UUID   `json:"vessel_id"`
	Result            string      `json:"result"` // delivered, stopped, gave_up, failed
	Passes            int         `json:"passes"`
	Sent              int         `json:"sent"`
	Delivered         int         `json:"delivered"`
	Staged            int         `json:"staged"`
	AlreadyReceived   int         `json:"already_received"`
	Failed            int         `json:"failed"`
	Referenced        int         `json:"referenced"`
	Indexed           int         `json:"indexed"` // chunks staged by a manifest index, not sent
	BytesSent         int64       `json:"bytes_sent"`
	BytesUncompressed int64       `json:"bytes_uncompressed"`
	StoppedSnapshots  []uuid.UUID `json:"stopped_snapshots"`
	Pending           int         `json:"pending"`
	Error             string      `json:"error"`
}

// publish drains the outbox (agent.Sender.Publish: passes until nothing
// is pending, a failure retrying cannot mend, or the give-up deadline),
// printing a line per pass, and reports.
func publish(ctx context.Context, e *env, c *command, f *publishFlags, st *stores) int {
	sender, err := agent.NewSender(f.config(st.outbox))
	if err != nil {
		return c.failf(e, "%s", configErr(err))
	}
	defer sender.Close()
	opts := outbox.DrainOptions{
		Backoff: outbox.Backoff{Min: publishBackoff.min, Max: publishBackoff.max},
		Until:   time.Now().Add(f.giveUp.d),
	}
	if !f.asJSON.on {
		opts.OnPass = func(p outbox.DrainPass) { printPass(e, p) }
		opts.OnGate = func(err error, wait time.Duration) {
			fmt.Fprintf(e.stdout, "capability declaration not read: %v\n  retrying in %v\n", err, wait)
		}
	}
	dr, err := sender.Publish(ctx, opts)
	auto := f.receiverV2.gate == agent.GateAuto
	switch {
	case errors.Is(err, outbox.ErrCapabilityOff) && auto:
		return c.failf(e, "the receiver at --url declares no protocol v2 support: nothing sent. %s (SPEC.md §7.5, §11.7)", strings.TrimPrefix(err.Error(), "httpbinding: "))
	case errors.Is(err, outbox.ErrCapabilityOff):
		return c.failf(e, "the receiver is not declared v2-capable: nothing sent. Pass --receiver-v2 once the receiver at --url supports protocol v2, or leave the gate to ask it (SPEC.md §7.5)")
	case auto && dr.Declared != "" && !f.asJSON.on:
		fmt.Fprintf(e.stdout, "receiver declaration: %s\n", dr.Declared)
	}
	rep := publishJSON{
		VesselID: f.vessel.id, Result: string(dr.Outcome), Passes: dr.Passes, Sent: dr.Sent,
		Delivered: dr.Delivered, Staged: dr.Delivered - dr.AlreadyReceived, AlreadyReceived: dr.AlreadyReceived,
		Failed: dr.Failed, Referenced: dr.Referenced, Indexed: dr.Indexed, BytesSent: dr.Bytes.Sent, BytesUncompressed: dr.Bytes.Uncompressed,
		StoppedSnapshots: append([]uuid.UUID{}, dr.Stopped...), Pending: dr.Pending,
	}
	switch dr.Outcome {
	case outbox.DrainGaveUp:
		rep.Error = giveUpReason(ctx, f.giveUp.d, dr.Last)
	case outbox.DrainFailed:
		rep.Error = failureReason(err)
	}
	if rep.Error == "" && err != nil { // the pending entries not counted
		rep.Error = located(err)
	}
	return reportPublish(e, c, rep, f.asJSON.on)
}

// gateFlag is --receiver-v2: absent or =auto (on only while the
// receiver's capability declaration names v2, SPEC.md §11.7), bare (on:
// the operator declares the receiver v2-capable) or =off.
type gateFlag struct {
	gate agent.Gate
	set  bool
}

func (f *gateFlag) String() string   { return "" }
func (f *gateFlag) IsBoolFlag() bool { return true }
func (f *gateFlag) optionalValue()   {}
func (f *gateFlag) Set(s string) error {
	if f.set {
		return errTwice
	}
	f.set = true
	switch s {
	case "true":
		f.gate = agent.GateOn
	case "auto":
		f.gate = agent.GateAuto
	case "off":
		f.gate = agent.GateOff
	default:
		return errors.New("takes no value, =auto or =off")
	}
	return nil
}

// printPass prints a pass's line, and what follows it: the snapshot a
// conflict stopped, or the last failure and the wait.
func printPass(e *env, p outbox.DrainPass) {
	fmt.Fprintf(e.stdout, "pass %d: sent %d, delivered %d (%d staged, %d already received), failed %d\n",
		p.N, p.Pass.Sent, p.Pass.Delivered, p.Pass.Delivered-p.Pass.AlreadyReceived, p.Pass.AlreadyReceived, p.Pass.Failed)
	if p.Pass.Referenced > 0 {
		fmt.Fprintf(e.stdout, "  %d chunk(s) sent by reference, %d of them sent again whole\n", p.Pass.Referenced, p.Pass.SentWhole)
	}
	if p.Pass.Indexed > 0 {
		fmt.Fprintf(e.stdout, "  %d chunk(s) staged by the manifest index, not sent\n", p.Pass.Indexed)
	}
	if errors.Is(p.Err, sourcecatalog.ErrConflict) {
		fmt.Fprintf(e.stdout, "  stopped snapshot %s: %v\n", p.Pass.Failures[len(p.Pass.Failures)-1].SnapshotID, p.Err)
	}
	if p.Wait > 0 {
		fmt.Fprintf(e.stdout, "  last failure: %v\n  retrying in %v\n", p.Last, p.Wait)
	}
}

// failureReason says what stopped publishing for good, with what the
// operator can do for the failures only an operator can mend.
func failureReason(err error) string {
	var tf *httpbinding.TLSError
	switch {
	case errors.Is(err, httpbinding.ErrUnauthorized):
		return "the receiver refused the credentials (401): check --cert and --key or --token-file"
	case errors.As(err, &tf) && tf.Refused:
		return fmt.Sprintf("%v: check --cert and --key, and the client CAs of the receiver (or its proxy)", tf)
	case errors.As(err, &tf):
		return fmt.Sprintf("%v: check --ca, which must hold the CA that signed the receiver's certificate, and the host of --url", tf)
	case outbox.NeedsOperator(err):
		return fmt.Sprintf("%v: check --vessel and the vessel's registration and credentials at the receiver", err)
	}
	return err.Error()
}

// reportPublish prints publish's report and returns its exit status: 0
// only when nothing is pending at the end and nothing was stopped.
func reportPublish(e *env, c *command, rep publishJSON, asJSON bool) int {
	if asJSON {
		if status := writeJSON(e, c, rep); status != exitOK {
			return status
		}
	} else {
		fmt.Fprintf(e.stdout, "published: vessel %s: %d delivered (%d staged, %d already received) in %d pass(es), %s stopped, %d pending\n",
			rep.VesselID, rep.Delivered, rep.Staged, rep.AlreadyReceived, rep.Passes,
			plural(len(rep.StoppedSnapshots), "snapshot"), rep.Pending)
		if rep.Sent > 0 {
			fmt.Fprintf(e.stdout, "  sent %d bytes (%d uncompressed), %d chunk(s) by reference, %d by the manifest index\n", rep.BytesSent, rep.BytesUncompressed, rep.Referenced, rep.Indexed)
		}
	}
	switch {
	case rep.Error != "":
		return c.failf(e, "%s", rep.Error)
	case rep.Result == "stopped":
		return c.failf(e, "a conflict stopped %s: the receiver holds other bytes for them", plural(len(rep.StoppedSnapshots), "snapshot"))
	case rep.Pending != 0:
		return c.failf(e, "%d entries pending at the end", rep.Pending)
	}
	return exitOK
}

// giveUpReason says why publish gave up.
func giveUpReason(interrupted context.Context, after time.Duration, last error) string {
	why := fmt.Sprintf("gave up after %v with entries pending", after)
	if interrupted.Err() != nil {
		why = "interrupted with entries pending"
	}
	if last != nil {
		why += "; last failure: " + last.Error()
	}
	return why
}
