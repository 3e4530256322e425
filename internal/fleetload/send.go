package fleetload

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// Clients are the fleet's senders' transports: one httpbinding.Client per
// vessel, each with its vessel's bearer token, all posting to one
// endpoint, and, when they ask for the receiver's declaration, each
// vessel's httpbinding.Gate of its client.
type Clients struct {
	http  []*httpbinding.Client
	gates []*httpbinding.Gate // nil: no declaration is asked for
}

// NewClients returns a Client per vessel of fleet for endpoint, an https
// URL whose certificate chains to roots. With declared, each vessel asks
// for the receiver's declaration through its own httpbinding.Gate before
// each snapshot, as a boat's Publisher does at each drain (SPEC.md
// §11.7): the first time, and again once its max-age has passed; Send
// then fails unless it declares manifest_index. Without, the indexes are
// sent unasked, to a floor server, which answers no declaration.
func NewClients(endpoint string, roots *x509.CertPool, fleet []Vessel, declared bool) (Clients, error) {
	cs := Clients{http: make([]*httpbinding.Client, len(fleet))}
	if declared {
		cs.gates = make([]*httpbinding.Gate, len(fleet))
	}
	for i, v := range fleet {
		c, err := httpbinding.NewClient(endpoint, httpbinding.WithTLSConfig(httpbinding.ClientTLSConfig(roots, nil)),
			httpbinding.WithBearerToken(v.Token))
		if err != nil {
			return Clients{}, fmt.Errorf("fleetload: %w", err)
		}
		cs.http[i] = c
		if declared {
			cs.gates[i] = httpbinding.NewGate(c)
		}
	}
	return cs, nil
}

// CloseIdle closes every client's kept-alive connections, so that the
// next round starts, as a vessel's next cycle minutes later would, with a
// TLS handshake.
func (cs Clients) CloseIdle() {
	for _, c := range cs.http {
		c.CloseIdleConnections()
	}
}

// open asks vessel's gate, if any, whether the receiver takes manifest
// indexes now.
func (cs Clients) open(ctx context.Context, vessel int) error {
	if cs.gates == nil {
		return nil
	}
	g := cs.gates[vessel]
	if _, err := g.Open(ctx); err != nil {
		return fmt.Errorf("fleetload: vessel %d: the receiver's declaration: %w", vessel, err)
	}
	if !g.ManifestIndexes() {
		return fmt.Errorf("fleetload: vessel %d: the receiver declares no %s: %s", vessel, httpbinding.CapabilityManifestIndex, g.Declared())
	}
	return nil
}

// A Check judges the receipt of message i of snap (Snapshot.Messages);
// nil accepts any receipt (a floor server's).
type Check func(snap Snapshot, i int, rc envelope.Receipt) error

// CheckStaged is serve's Check: every receipt acknowledges its message
// (outbox.Entry.Receipt) as staged, and only the last message's says the
// snapshot is complete; the index's names missing exactly the chunks
// snap.Missing holds, which are the ones sent next — a receiver that
// wants another chunk, or one the sender would send although the receiver
// holds it, fails the round.
func CheckStaged(snap Snapshot, i int, rc envelope.Receipt) error {
	msgs := snap.Messages()
	e := msgs[i]
	last := i == len(msgs)-1
	if i == 0 && rc.Missing != snap.Missing {
		return fmt.Errorf("fleetload: %s: the index's receipt names chunks %v missing, want %v", e.EntityKey, rc.Missing.Indices(), snap.Missing.Indices())
	}
	if rc.Status != envelope.Staged || !rc.Matches(e.Receipt()) || rc.Complete != last {
		return fmt.Errorf("fleetload: %s: receipt %s complete=%v, want staged complete=%v of %s", e.EntityKey, rc.Status, rc.Complete, last, e.EntityKey)
	}
	return nil
}

// A Result is what one round took.
type Result struct {
	Elapsed   time.Duration // from the first message sent to the last answer
	Latency   *Latencies    // one sample per message: Send's time
	Snapshots int
	Messages  int // sent: indexes and chunks
	Chunks    int // chunks sent whole
}

// Send delivers round through clients from senders goroutines. Each
// goroutine takes the next snapshot not yet taken and, once its vessel's
// gate is open (Clients), sends its messages (Snapshot.Messages) in order
// with its vessel's client, timing each Send, so that senders vessels
// publish at once, each one message at a time. It returns the round's
// Result, or the first error of a gate, a Send or check (after every
// goroutine stopped: a failing round stops taking snapshots).
func Send(ctx context.Context, clients Clients, round []Snapshot, senders int, check Check) (Result, error) {
	if senders < 1 {
		return Result{}, errors.New("fleetload: Send needs at least one sender")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan Snapshot)
	lat := make([]*Latencies, senders)
	sent := make([]Result, senders) // Messages and Chunks of each goroutine
	errs := make([]error, senders)
	var wg sync.WaitGroup
	start := time.Now()
	for g := range senders {
		lat[g] = &Latencies{}
		wg.Go(func() {
			for snap := range next {
				if err := sendSnapshot(ctx, clients, snap, lat[g], &sent[g], check); err != nil {
					errs[g] = err
					cancel()
					for range next { // let the dispatcher finish
					}
					return
				}
			}
		})
	}
dispatch:
	for _, s := range round {
		select {
		case next <- s:
		case <-ctx.Done():
			break dispatch
		}
	}
	close(next)
	wg.Wait()
	res := Result{Elapsed: time.Since(start), Latency: &Latencies{}, Snapshots: len(round)}
	for g, l := range lat {
		res.Latency.Merge(l)
		res.Messages += sent[g].Messages
		res.Chunks += sent[g].Chunks
	}
	if err := errors.Join(errs...); err != nil {
		return Result{}, err
	}
	if err := ctx.Err(); err != nil && res.Messages < Messages(round) {
		return Result{}, fmt.Errorf("fleetload: %w", err)
	}
	return res, nil
}

// sendSnapshot opens snap's vessel's gate and sends snap's messages in
// order, recording each Send's time and counting into sent what it sent.
func sendSnapshot(ctx context.Context, clients Clients, snap Snapshot, lat *Latencies, sent *Result, check Check) error {
	if err := clients.open(ctx, snap.Vessel); err != nil {
		return err
	}
	c := clients.http[snap.Vessel]
	for i, e := range snap.Messages() {
		t := time.Now()
		rc, err := c.Send(ctx, e)
		lat.Add(time.Since(t))
		sent.Messages++
		if e.EntityType == sourcecatalog.ChunkEntityType {
			sent.Chunks++
		}
		if err != nil {
			return fmt.Errorf("fleetload: %s: %w", e.EntityKey, err)
		}
		if check != nil {
			if err := check(snap, i, rc); err != nil {
				return err
			}
		}
	}
	return nil
}

var _ outbox.Transport = (*httpbinding.Client)(nil)
