package demo

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/examples"
)

// The discovery cycles of the demo run on the example boat, 15 minutes
// apart: revision n is discovered at scanTime(n), so a run on stores that
// earlier runs left carries on in time too. Everything is synthetic.
//
// scanTime is when the cycle of revision n was discovered.
func scanTime(n int64) time.Time {
	return examples.DiscoveredAt.Add(time.Duration(n-1) * 15 * time.Minute)
}

// What changes between the two scans.
const (
	// The autopilot's course computer gets a firmware update: its source
	// record's meta changes.
	updatedFunction = "Autopilot"
	updatedVersion  = "3.12"
	// The anchor light circuit is no longer selected. Its DC switching
	// module serves no other path, so its source leaves the selection too.
	leavingPath = "electrical.switches.anchorLight.state"
)

// scans returns the records of the two discovery cycles and lines that say
// what changed between them.
func scans() (first, second []*catalog.Record, story []string, err error) {
	first = examples.Boat()

	// The source of the leaving path, and whether it serves another path.
	var leavingSource string
	for _, r := range first {
		if o, ok := r.AsObservation(); ok && o.Path == leavingPath {
			leavingSource = o.SourceRef
		}
	}
	if leavingSource == "" {
		return nil, nil, nil, fmt.Errorf("demo: the example boat has no path %s", leavingPath)
	}
	sourceStays := false
	for _, r := range first {
		if o, ok := r.AsObservation(); ok && o.SourceRef == leavingSource && o.Path != leavingPath {
			sourceStays = true
		}
	}

	updated := false
	var oldVersion, updatedRef string
	for _, r := range first {
		switch r.Kind() {
		case catalog.KindPath, catalog.KindObservation:
			if r.PathName() == leavingPath {
				continue
			}
		case catalog.KindSource:
			if r.SourceRef() == leavingSource && !sourceStays {
				continue
			}
			s, _ := r.AsSource()
			if !updated && deviceFunction(s) == updatedFunction {
				nr, old, err := withSoftwareVersion(s, updatedVersion)
				if err != nil {
					return nil, nil, nil, err
				}
				second = append(second, nr)
				updated, oldVersion, updatedRef = true, old, s.SourceRef
				continue
			}
		}
		second = append(second, r)
	}
	if !updated {
		return nil, nil, nil, fmt.Errorf("demo: the example boat has no NMEA 2000 %s with another software version than %s", updatedFunction, updatedVersion)
	}
	story = []string{fmt.Sprintf("the autopilot (%s) got firmware %s, was %s", updatedRef, updatedVersion, oldVersion)}
	if sourceStays {
		story = append(story, leavingPath+" is no longer selected")
	} else {
		story = append(story, fmt.Sprintf("%s is no longer selected, nor its only source %s", leavingPath, leavingSource))
	}
	return first, second, story, nil
}

// deviceFunction is the NMEA 2000 deviceFunction in a source's meta, or "".
func deviceFunction(s catalog.Source) string {
	var meta struct {
		DeviceFunction string `json:"deviceFunction"`
	}
	if s.Meta == nil || json.Unmarshal(s.Meta, &meta) != nil {
		return ""
	}
	return meta.DeviceFunction
}

// withSoftwareVersion returns the source record with its meta's
// softwareVersion replaced, and the version it had.
func withSoftwareVersion(s catalog.Source, version string) (*catalog.Record, string, error) {
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(s.Meta, &meta); err != nil {
		return nil, "", fmt.Errorf("demo: meta of %s: %w", s.SourceRef, err)
	}
	var old string
	_ = json.Unmarshal(meta["softwareVersion"], &old)
	if old == version {
		return nil, "", fmt.Errorf("demo: %s already runs software version %s", s.SourceRef, version)
	}
	meta["softwareVersion"], _ = json.Marshal(version)
	var err error
	if s.Meta, err = json.Marshal(meta); err != nil {
		return nil, "", err
	}
	r, err := catalog.NewSource(s)
	return r, old, err
}
