// Package outbox is the on-board side of the Source Catalog protocol v2:
// it turns one discovery cycle into a snapshot persisted as outbox entries
// in a single transaction, and publishes those entries to the receiver.
//
// # Writing
//
// [Writer.Commit] takes a [Cycle] — the records a discovery scan found,
// with its truncation and pagination flags — and, in one Store
// transaction, allocates the vessel's next revision, builds the manifest
// and chunks, checks every entry's bytes against its hash, and writes the
// entries as pending. Either everything is written or nothing is. A cycle
// keeps its snapshot_id across retries; committing a cycle again after its
// transaction committed returns the same revision and entries.
//
// # Publishing
//
// A [Publisher] hands pending entries to an integrator's [Transport] (at
// least once) and marks an entry delivered only on a receipt that matches
// it: entity type, snapshot, chunk index and payload hash. Bytes are checked
// against their hash again before they are sent. A conflict answer stops
// the snapshot's publishing and is surfaced, never retried blindly. v2
// entity types are never sent until the receiver's v2 capability is
// declared ([WithReceiverV2]); it is off by default, so a receiver that
// supports only v1 never sees them.
//
// A [Pass] lists each entry it did not deliver as a [Failure], with its
// class and cause. [Publisher.Drain] is the publish-until-done loop: passes
// with a backoff between those that failed, until nothing is pending, a
// deadline passes or a failure that only an operator can mend
// ([NeedsOperator]: refused credentials, a TLS verification failure, a
// refusal of the vessel) ends it at once; a [DrainReport] sums it up. It
// runs on a [Clock], so that a test drives its time. A Transport that is
// also a [CountedTransport] reports each request's bytes, as sent and
// uncompressed, which Pass.Bytes and DrainReport.Bytes sum.
//
// Package agent builds a Publisher, its transport and its gate from one
// Config (agent.NewSender); use the pieces here for a link of your own.
package outbox
