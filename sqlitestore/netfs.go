package sqlitestore

import (
	"fmt"
	"path/filepath"
)

// A WAL journal keeps its index in shared memory, a file beside the
// database that every process using the database maps: processes on two
// hosts sharing a network file system would each map their own copy and
// corrupt the database (https://sqlite.org/wal.html, "WAL does not work
// over a network filesystem"). Open refuses a WAL database on a network
// file system rather than fall back to a rollback journal: a file already
// in WAL mode cannot leave it while another process has it open, and two
// processes would disagree on the journal; an operator moves the file to
// a local disk instead.

// networkFS names the file system type of a network file system, from
// Linux's statfs f_type (linux/magic.h); FUSE is among them, as sshfs and
// other FUSE file systems may be served from another host.
var networkFS = map[int64]string{
	0x6969:     "NFS",
	0x517b:     "SMB",
	0xfe534d42: "SMB2",
	0xff534d42: "CIFS",
	0x01021997: "9P",
	0x65735546: "FUSE",
	0x5346414f: "AFS",
	0x00c36400: "Ceph",
	0x73757245: "Coda",
}

// fsType returns the file system type (statfs f_type) of the file system
// holding path, or ok false where the platform does not say. Tests
// replace it.
var fsType = statfsType

// checkLocalFS fails with ErrNetworkFileSystem when the directory holding
// path is on a network file system.
func checkLocalFS(path string) error {
	dir := filepath.Dir(path)
	t, ok, err := fsType(dir)
	if err != nil {
		return unavailable("stat the file system of", dir, err)
	}
	if name, network := networkFS[t]; ok && network {
		return fmt.Errorf("sqlitestore: %s: on a network file system (%s, type %#x), where the WAL journal's shared memory does not work: move the database to a local disk: %w", path, name, t, ErrNetworkFileSystem)
	}
	return nil
}
