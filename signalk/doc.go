// Package signalk reads a vessel's discovery cycle from a Signal K server
// over its v1 REST API and maps it to Source Catalog records, as SPEC.md
// §12 specifies.
//
// A Client finds the API in the server's /signalk discovery document,
// reads the whole data model in one response (GET /signalk/v1/api/: one
// picture of the server's state, vessels and sources alike, rather than
// several reads that a change could fall between), and reads the server's
// start id from its WebSocket hello before and after, so that a server
// that restarted, or started less than a settle time ago, is never taken
// for the whole picture. Map is the mapping alone, from a full model's
// bytes to records.
//
// # Mapping
//
// Every value object of the self vessel — an object with a value member —
// whose source is live becomes a path record and an observation; a source
// is live while its value is not null and, under an age bound (AgeBound,
// on by default in a Client), no older than the bound before the server's
// time, whatever its type, so that a device that fell silent leaves. Its meta becomes the path's meta,
// without units, which becomes the record's unit, and displayUnits, a
// per-user rendering. A path without units has no unit (null) when its
// value is a string or a boolean, and an unknown unit otherwise. The
// observation names the selected source (see Selection) and the value
// type by catalog's detection, an object's null members read as absent.
// Each selected source is resolved against the sources tree — a provider
// entry, or a device entry keyed by address, talker or CAN name, labels
// with dots included — and becomes a source record with the provider's
// label and type and the device's metadata, without what changes with no
// change on board: NMEA 2000 PGN timestamps, undecoded PGNs and the bus
// address; NMEA 0183 sentences keep their names only.
//
// # Failing closed
//
// Whatever keeps a scan from being the whole, current picture is a
// *ScanError of class sourcecatalog.ErrIncompleteScan, and nothing may be
// committed from it: a request that fails or answers other than 2xx, a
// body cut short or over its bound, JSON that is not strict, a model
// member of the wrong type, a self that names no vessel, an observation
// whose source the tree does not list, a server that started within the
// settle time or restarted during the scan.
//
// # Watching
//
// Client.Watch follows the server's delta stream and wakes its caller when
// a scan is worth doing before the next one due — a path or source the
// stream had not delivered, a value written null, a source silent for the
// age bound — debounced (SPEC.md §12.7). It is a trigger only: Discover's
// full model stays the picture to commit.
//
// # Security considerations
//
// Every answer is bounded before it is parsed: the full model to
// DefaultMaxBytes (WithMaxBytes), after any content coding, and the
// discovery document and the hello to 64 KiB; a scan to DefaultTimeout
// (WithTimeout). JSON nests at most 64 levels, and parsing costs time and
// memory linear in the body. The token goes only to the server's own
// origin: the discovery document's endpoints must be of it, and no
// redirect is followed. Error texts quote at most 200 bytes of an answer.
package signalk
