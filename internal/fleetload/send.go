package fleetload

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// Clients are the fleet's senders' transports: one httpbinding.Client per
// vessel, each with its vessel's bearer token, all posting to one
// endpoint.
type Clients []*httpbinding.Client

// NewClients returns a Client per vessel of fleet for endpoint, an https
// URL whose certificate chains to roots.
func NewClients(endpoint string, roots *x509.CertPool, fleet []Vessel) (Clients, error) {
	cs := make(Clients, len(fleet))
	for i, v := range fleet {
		c, err := httpbinding.NewClient(endpoint, httpbinding.WithTLSConfig(httpbinding.ClientTLSConfig(roots, nil)),
			httpbinding.WithBearerToken(v.Token))
		if err != nil {
			return nil, fmt.Errorf("fleetload: %w", err)
		}
		cs[i] = c
	}
	return cs, nil
}

// CloseIdle closes every client's kept-alive connections, so that the
// next round starts, as a vessel's next cycle minutes later would, with a
// TLS handshake.
func (cs Clients) CloseIdle() {
	for _, c := range cs {
		c.CloseIdleConnections()
	}
}

// A Check judges the receipt of entry i of snap; nil accepts any receipt
// (a floor server's).
type Check func(snap Snapshot, i int, rc envelope.Receipt) error

// CheckStaged is serve's Check: every receipt acknowledges its entry
// (outbox.Entry.Receipt) as staged, and only the last entry's says the
// snapshot is complete.
func CheckStaged(snap Snapshot, i int, rc envelope.Receipt) error {
	e := snap.Entries[i]
	last := i == len(snap.Entries)-1
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
	Messages  int
}

// Send delivers round through clients from senders goroutines. Each
// goroutine takes the next snapshot not yet taken and sends its entries in
// order with its vessel's client, timing each Send, so that senders
// vessels publish at once, each one message at a time. It returns the
// round's Result, or the first error of a Send or of check (after every
// goroutine stopped: a failing round stops taking snapshots).
func Send(ctx context.Context, clients Clients, round []Snapshot, senders int, check Check) (Result, error) {
	if senders < 1 {
		return Result{}, errors.New("fleetload: Send needs at least one sender")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan Snapshot)
	lat := make([]*Latencies, senders)
	errs := make([]error, senders)
	var wg sync.WaitGroup
	start := time.Now()
	for g := range senders {
		lat[g] = &Latencies{}
		wg.Go(func() {
			for snap := range next {
				if err := sendSnapshot(ctx, clients[snap.Vessel], snap, lat[g], check); err != nil {
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
	res := Result{Elapsed: time.Since(start), Latency: &Latencies{}, Snapshots: len(round), Messages: Messages(round)}
	for _, l := range lat {
		res.Latency.Merge(l)
	}
	if err := errors.Join(errs...); err != nil {
		return Result{}, err
	}
	if err := ctx.Err(); err != nil && res.Latency.Len() < res.Messages {
		return Result{}, fmt.Errorf("fleetload: %w", err)
	}
	return res, nil
}

// sendSnapshot sends snap's entries in order, recording each Send's time.
func sendSnapshot(ctx context.Context, c *httpbinding.Client, snap Snapshot, lat *Latencies, check Check) error {
	for i, e := range snap.Entries {
		t := time.Now()
		rc, err := c.Send(ctx, e)
		lat.Add(time.Since(t))
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
