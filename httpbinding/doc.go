// Package httpbinding is the HTTP binding of the Source Catalog protocol
// v2 (SPEC.md §11): the receiver as an HTTPS endpoint, and the sender's
// outbox.Transport that talks to it. One package holds both sides because
// they share one wire contract — the request form, the media type, the
// status of each error class — and each side's tests drive the other.
//
// # Server
//
// A [Handler] serves one wrapped outbox request (SPEC.md §7.3, the form of
// envelope.DefaultWrapper) per POST: it authenticates the sender
// ([Authenticator]: [MutualTLS], [Tokens], [TrustedProxy] behind an
// ingress that authenticates, or [InsecureNoAuth] for tests),
// reads at most [MaxRequestBody] bytes — a gzip body (Content-Encoding:
// gzip, one member) decompressed to at most as many — hands the message to a
// finalize.Receiver and answers with the receipt (200) or the refusal
// (SPEC.md §9), its status given by the class ([StatusOf]). A 200 is
// written only after the Receiver staged the message durably. When a
// receipt reports the snapshot's set complete the Handler finalizes
// before answering; a [Reconciler] finalizes what a crash or a failed
// Finalize left behind, at start-up and on an interval. An authenticated
// GET on the same URL is answered with the receiver's capability
// declaration (SPEC.md §11.7): protocol v2 and the optional capabilities
// given with [WithCapabilities].
//
// [NewServer] returns an http.Server hardened for the open network:
// TLS 1.2 at least, HTTP/2 and HTTP/1.1, read-header, read, write and idle
// timeouts, a header cap, HTTP/2's streams, frames and header tables
// bounded; the Handler adds a per-vessel limit of requests in flight.
// [NewInsecureServer] has the same bounds over plain HTTP/1.1, for
// a Handler built with [InsecureNoAuth] or [TrustedProxy]. An [Observer]
// is told of every request, Finalize and reconciliation, for logs and
// metrics, without this package importing a metrics library. [Health]
// answers a prober from a check such as finalize.Receiver.Ping; package
// httpbinding/inventory serves the catalogs read-only, for an operator's
// listener.
//
// # Client
//
// A [Client] posts an outbox entry, wrapped exactly as the Handler reads
// it, and returns the strictly decoded receipt; a refusal comes back as an
// error of its class (a conflict wraps sourcecatalog.ErrConflict, which
// stops the snapshot in outbox.Publisher), and every other failure — the
// network, a timeout, an answer lost or cut, an answer that breaks the
// binding — as sourcecatalog.ErrStoreUnavailable, to be retried. With
// [WithRequestCompression], for a receiver that declared request_gzip, it
// sends each body gzipped when that is shorter (SPEC.md §11.1).
// [Client.Declaration] reads the receiver's capability declaration
// (SPEC.md §11.7), and a [Gate] built on it is the outbox.Publisher's
// capability gate in auto mode: open only while the receiver declares v2.
//
// # Security considerations
//
// A vessel's credentials authenticate only that vessel: the Receiver
// refuses a message naming another vessel (403 foreign_vessel) before
// staging anything, and the binding offers no way to read a vessel's
// data (a GET reads the receiver's declaration only, the same for every
// vessel). Client
// certificates are verified by MutualTLS against the operator's CAs, for
// client authentication and within their validity; a request whose
// certificate fails is answered 401, like one without, its body saying
// why in a fixed phrase ([RefusalReason]) that names nothing of the
// server. Bearer tokens are
// kept as SHA-256 hashes, compared in constant time, and refused over a
// connection without TLS; so is every Authorization header on a connection
// without TLS, whatever the Authenticator.
// Every read is bounded: the body (32,768 bytes as sent and, gzipped,
// decompressed — a zip bomb costs 32 KiB of output, not its size —, the rest never
// interpreted, and dropped for at most 1 MiB and 2 s after an early answer
// so that the sender can read it), the header, each phase of a connection
// in time, the answer the Client reads (envelope.MaxAnswerSize). A
// refusal's message is its class's text alone, never a detail or a cause,
// which may describe the server's internals; the Observer gets it.
package httpbinding
