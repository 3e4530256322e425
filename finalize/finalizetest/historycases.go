package finalizetest

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

var historyCases = []testCase{
	{"Sequence", testHistorySequence},
	{"WritesOnlyChanges", testWritesOnlyChanges},
}

func seenOf(s *envelope.Snapshot) string {
	return seenView(finalize.Seen{Revision: s.Manifest.Revision, At: s.Manifest.DiscoveredAt})
}

// requireItem finds one item of the active catalog and checks its history.
func (e *env) requireItem(v catalogView, kind, path, ref string, first, last *envelope.Snapshot, current bool) itemView {
	e.t.Helper()
	it, ok := v.item(kind, path, ref)
	require.True(e.t, ok, "item %s %s %s in the inventory", kind, path, ref)
	require.Equal(e.t, seenOf(first), it.FirstSeen, "first seen of %s %s %s", kind, path, ref)
	require.Equal(e.t, seenOf(last), it.LastSeen, "last seen of %s %s %s", kind, path, ref)
	require.Equal(e.t, current, it.Current, "currently observed: %s %s %s", kind, path, ref)
	return it
}

// testHistorySequence follows items through six activations in which they
// stay, change (unit, metadata, value type, source, source label), leave and
// come back, checking the history by hand and against the model.
func testHistorySequence(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	const (
		sog   = "navigation.speedOverGround"
		mob   = "notifications.mob"
		awsp  = "environment.wind.speedApparent"
		water = "environment.water.temperature"
		state = "navigation.state"
		depth = "environment.depth.belowTransducer"
		volts = "electrical.batteries.house.voltage"
		name  = "electrical.batteries.house.name"
	)
	inv1 := baseInventory().withSensors("sensor", 150, "m")
	s1 := e.build(1, inv1)
	e.activate(s1)
	e.requireActive(s1)
	v := e.active()
	e.requireItem(v, "path", sog, "", s1, s1, true)
	e.requireItem(v, "source", "", srcWind, s1, s1, true)

	// 2: changes of every kind; mob leaves; water appears.
	inv2 := inv1.
		with(t, sog, func(s *sel) { s.unit = catalog.UnitOf("kn") }).
		with(t, depth, func(s *sel) { s.meta = `{"displayName":"DBT"}` }).
		with(t, state, func(s *sel) { s.vt = catalog.Unknown }).
		with(t, awsp, func(s *sel) { s.source = srcDerived }).
		withSource(srcGPS, src{label: "gps", typ: "NMEA0183"}).
		without(mob).
		plus(sel{path: water, unit: catalog.UnitOf("K"), source: srcDepth, vt: catalog.Number})
	s2 := e.build(2, inv2)
	e.activate(s2)
	e.requireActive(s1, s2)
	v = e.active()
	it := e.requireItem(v, "path", sog, "", s1, s2, true)
	require.Contains(t, it.Record, `"unit":"kn"`, "the latest record")
	e.requireItem(v, "path", mob, "", s1, s1, false)
	e.requireItem(v, "observation", mob, srcDerived, s1, s1, false)
	e.requireItem(v, "observation", awsp, srcWind, s1, s1, false)
	e.requireItem(v, "observation", awsp, srcDerived, s2, s2, true)
	e.requireItem(v, "observation", state, srcDerived, s1, s2, true)
	it = e.requireItem(v, "source", "", srcGPS, s1, s2, true)
	require.Contains(t, it.Record, `"label":"gps"`)
	e.requireItem(v, "path", water, "", s2, s2, true)

	// 3: mob and the wind source come back; water leaves.
	inv3 := inv2.
		plus(sel{path: mob, source: srcDerived, vt: catalog.Null}).
		with(t, awsp, func(s *sel) { s.source = srcWind }).
		without(water)
	s3 := e.build(3, inv3)
	e.activate(s3)
	e.requireActive(s1, s2, s3)
	v = e.active()
	e.requireItem(v, "path", mob, "", s1, s3, true)
	e.requireItem(v, "observation", mob, srcDerived, s1, s3, true)
	e.requireItem(v, "observation", awsp, srcWind, s1, s3, true)
	e.requireItem(v, "observation", awsp, srcDerived, s2, s2, false)
	e.requireItem(v, "path", water, "", s2, s2, false)
	e.requireItem(v, "observation", water, srcDepth, s2, s2, false)

	// 4: the same document at a new revision: only the pointer moves.
	s4 := e.build(4, inv3)
	e.activate(s4)
	e.requireActive(s1, s2, s3, s4)
	v = e.active()
	e.requireItem(v, "path", mob, "", s1, s4, true)
	e.requireItem(v, "path", water, "", s2, s2, false)
	e.requireItem(v, "observation", awsp, srcDerived, s2, s2, false)

	// 5: the battery source leaves with both of its paths; water comes
	// back with another unit.
	inv5 := inv3.without(volts, name).
		plus(sel{path: water, unit: catalog.UnitOf("°C"), meta: `{"description":"Sea temperature"}`, source: srcDepth, vt: catalog.Number})
	s5 := e.build(5, inv5)
	e.activate(s5)
	e.requireActive(s1, s2, s3, s4, s5)
	v = e.active()
	it = e.requireItem(v, "path", water, "", s2, s5, true)
	require.Contains(t, it.Record, `°C`)
	e.requireItem(v, "source", "", srcBattery, s1, s4, false)
	e.requireItem(v, "path", volts, "", s1, s4, false)

	// 6: the battery comes back under a new label.
	s6 := e.build(6, inv5.plus(sel{path: volts, unit: catalog.UnitOf("V"), source: srcBattery, vt: catalog.Number}).
		withSource(srcBattery, src{label: "house bank"}))
	e.activate(s6)
	e.requireActive(s1, s2, s3, s4, s5, s6)
	v = e.active()
	it = e.requireItem(v, "source", "", srcBattery, s1, s6, true)
	require.Contains(t, it.Record, `"label":"house bank"`)
	e.requireItem(v, "path", name, "", s1, s4, false)
}

// testWritesOnlyChanges: activation writes the items that appear, change
// or leave, not the whole snapshot; an identical document only the pointer.
func testWritesOnlyChanges(t *testing.T, newStore NewStore) {
	fs := NewFaultStore(newStore(t))
	e := envOn(t, fs)
	a := e.build(1, baseInventory().withSensors("sensor", 150, "m"))
	e.activate(a)
	b := e.build(2, changedInventory(t).withSensors("sensor", 150, "m"))
	e.deliverAll(messagesOf(t, b), envelope.Staged)

	before, after := expect(e.vessel, a), expect(e.vessel, a, b)
	put, retired := 0, 0
	for _, it := range after.Items {
		old, ok := before.item(it.Kind, it.Path, it.SourceRef)
		switch {
		case it.Current && (!ok || !old.Current || old.Record != it.Record):
			put++
		case !it.Current && ok && old.Current:
			retired++
		}
	}
	require.Less(t, put+retired, len(recordsOf(b))/10, "fixture: few changes")

	fs.ResetCalls()
	require.Equal(t, finalize.Activated, e.finalize(idOf(b)).Status)
	calls := fs.Calls()
	require.Equal(t, put, calls["PutItems"], "items written: those that appear or change")
	require.Equal(t, retired, calls["RetireItems"], "items retired: those that leave")
	require.Equal(t, 1, calls["SetVessel"])
	e.requireActive(a, b)

	c := e.build(3, changedInventory(t).withSensors("sensor", 150, "m"))
	e.deliverAll(messagesOf(t, c), envelope.Staged)
	fs.ResetCalls()
	require.Equal(t, finalize.Activated, e.finalize(idOf(c)).Status)
	calls = fs.Calls()
	require.Zero(t, calls["PutItems"], "an identical document writes no item")
	require.Zero(t, calls["RetireItems"])
	require.Zero(t, calls["SetIndex"])
	require.Equal(t, 1, calls["SetVessel"], "only the pointer")
	e.requireActive(a, b, c)
}
