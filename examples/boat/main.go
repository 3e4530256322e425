// Command boat commits the example boat's records to a SQLite outbox and
// publishes them as the receiver declares (gzip, chunk references):
//
//	boat --url https://shore.example/v2/messages --token-file FILE [--ca FILE] [--outbox boat.db]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/yachtmemory/sourcecatalog/agent"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

func main() {
	if _, err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "boat:", err)
		os.Exit(1)
	}
}

// run commits one cycle and publishes it as args say, printing to w.
func run(ctx context.Context, args []string, w io.Writer) (agent.Report, error) {
	fs := flag.NewFlagSet("boat", flag.ContinueOnError)
	url := fs.String("url", "", "the receiver's https URL")
	token := fs.String("token-file", "", "a file holding the vessel's bearer token")
	ca := fs.String("ca", "", "the CAs of the receiver's certificate (PEM; default: the system's)")
	file := fs.String("outbox", "boat.db", "the outbox's SQLite file")
	if err := fs.Parse(args); err != nil {
		return agent.Report{}, err
	}
	store, err := sqlitestore.Open(ctx, *file)
	if err != nil {
		return agent.Report{}, err
	}
	defer store.Close()
	sender, err := agent.NewSender(agent.Config{
		Vessel: examples.VesselID, Store: store.Outbox(), URL: *url, TokenFile: *token, CAFile: *ca,
	})
	if err != nil {
		return agent.Report{}, err
	}
	defer sender.Close()
	if _, err := sender.Commit(ctx, examples.Boat()); err != nil {
		return agent.Report{}, err
	}
	rep, err := sender.Publish(ctx, outbox.DrainOptions{Until: time.Now().Add(time.Minute)})
	fmt.Fprintf(w, "%s: %d delivered, %d bytes sent (%d uncompressed), %d by reference, %d pending\n", rep.Outcome, rep.Delivered, rep.Bytes.Sent, rep.Bytes.Uncompressed, rep.Referenced, rep.Pending)
	return rep, err
}
