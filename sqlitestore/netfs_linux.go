package sqlitestore

import "syscall"

// statfsType returns the statfs f_type of the file system holding path.
func statfsType(path string) (int64, bool, error) {
	var st syscall.Statfs_t
	for {
		err := syscall.Statfs(path, &st)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, false, err
		}
		return int64(st.Type), true, nil
	}
}
