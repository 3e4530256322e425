package examples

import (
	"strconv"
	"strings"

	"github.com/yachtmemory/sourcecatalog/catalog"
)

// Scaled returns a deterministic synthetic catalog of exactly n records for
// benchmarks and limit tests, shaped like [Boat]'s: p paths, one observation
// per path and s sources, n = 2p + s, every source referenced. Scaled(1500)
// is a well-equipped boat (745 paths, 10 sources, 15 chunks); Scaled(25600)
// is the protocol's largest snapshot (12,700 paths, 200 sources).
//
// The paths repeat device templates — battery banks, solar arrays,
// inverters, engines, tanks, cabin climate, switched circuits and sensor
// mounts — over numbered instances, with SI, null and absent units, all
// eight value types detected from sample values, and Signal K metadata
// (a description, often a displayName, some alarm zones). The sources are
// mostly NMEA 2000 devices, with some NMEA 0183 interfaces and plugins; s is
// about n/128 (at least 1, at most 200) and a source serves a contiguous
// run of paths. The records come in no particular order.
//
// Record sizes are tuned so that a maximal snapshot fits the protocol's
// 256-chunk budget while filling most of it: path records average about 150
// canonical bytes, sources about 157 and observations about 140, and every
// run of 100 consecutive records in canonical order stays under the
// 16,384-byte chunk body. envelope.Build therefore cuts Scaled(25600) into
// exactly 256 chunks of 100 records, with bodies of 12.9 to 16.1 KB (89% of
// the 256 × 16 KiB budget).
//
// n must be at least 3, and not 4 (no catalog of 4 records satisfies the
// integrity rules). Scaled panics otherwise. Values above
// sourcecatalog.MaxRecords are allowed, to exercise the limit.
func Scaled(n int) []*catalog.Record {
	if n < 3 || n == 4 {
		panic("examples: Scaled needs n >= 3 and n != 4, got " + strconv.Itoa(n))
	}
	s, p := scaledShape(n)
	sources := make([]string, s)
	out := make([]*catalog.Record, 0, n)
	for j := range sources {
		r := scaledSource(j)
		sources[j] = r.SourceRef()
		out = append(out, r)
	}
	i := 0
	for k := 0; i < p; k++ {
		dev := scaledDevices[k%len(scaledDevices)]
		id := dev.ids[(k/len(scaledDevices))%len(dev.ids)] + strconv.Itoa(k/len(scaledDevices)/len(dev.ids)+1)
		prefix := dev.prefix + id + "."
		for _, t := range dev.templates {
			if i == p {
				break
			}
			path := prefix + t.suffix
			meta := strings.ReplaceAll(t.meta, "$", id)
			src := sources[i*s/p] // onto: consecutive paths share a source
			out = append(out, observation(path, src, t.sample), pathRecord(path, t.unit, meta))
			i++
		}
	}
	return out
}

// scaledShape returns the number of sources and paths of a catalog of n
// records: n = 2p + s with 1 <= s <= p.
func scaledShape(n int) (s, p int) {
	s = min(max(n/128, 1), 200)
	if (n-s)%2 != 0 {
		if s > 1 {
			s--
		} else {
			s++
		}
	}
	return s, (n - s) / 2
}

// scaledSource returns the j-th source: NMEA 0183 for every tenth, a plugin
// for every tenth offset by five, NMEA 2000 otherwise.
func scaledSource(j int) *catalog.Record {
	num := strconv.Itoa(j)
	switch j % 10 {
	case 0:
		talkers := [...]string{"GP", "II", "SD", "WI", "HC"}
		port := "ttyUSB" + strconv.Itoa(j/10)
		talker := talkers[(j/10)%len(talkers)]
		return sourceRecord(port+"."+talker, port, "NMEA0183",
			`{"talker":"`+talker+`","baudRate":4800,"sentences":["DBT","HDG","MWV"]}`)
	case 5:
		plugins := [...]string{"signalk-derived-data", "signalk-autostate", "bms-bridge", "venus-relay"}
		name := plugins[(j/10)%len(plugins)]
		return sourceRecord(name+"-"+num+".XX", name, "Plugin",
			`{"description":"Synthetic plugin `+num+`","version":"1.`+num+`.0"}`)
	}
	dev := scaledN2K[j%len(scaledN2K)]
	bus := n2kBuses[j%len(n2kBuses)]
	ref := bus + "." + n2kName(uint32(300000+j), dev.mfr, uint64(j%8), dev.fn, dev.class)
	return sourceRecord(ref, bus, "NMEA2000",
		`{"manufacturer":"`+dev.mfrName+`","model":"`+dev.model+`"}`)
}

// n2kBuses are the provider ids of the NMEA 2000 interfaces, as a Signal K
// server configured with one gateway per backbone names them.
var n2kBuses = [...]string{"n2k-engineroom", "n2k-navstation", "n2k-flybridge"}

var scaledN2K = []struct {
	mfr, fn, class                    uint64
	mfrName, model, className, fnName string
}{
	{mfrVictron, fnBattery, classGeneration, "Victron Energy", "SmartShunt 500A", "Electrical Generation", "Battery"},
	{mfrMaretron, fnEngine, classPropulsion, "Maretron", "J2K100", "Propulsion", "Engine"},
	{mfrMaretron, fnFluidLevel, classSensorIface, "Maretron", "TLM100", "Sensor Communication Interface", "Fluid Level"},
	{mfrAirmar, fnAtmospheric, classExternalEnv, "Airmar", "220WX", "External Environment", "Atmospheric"},
	{mfrMaretron, fnLoadController, classDistribution, "Maretron", "DCR100", "Electrical Distribution", "Load Controller"},
}

type scaledTemplate struct {
	suffix string
	unit   catalog.Unit
	sample string
	meta   string // "$" stands for the instance id
}

type scaledDevice struct {
	prefix    string
	ids       []string
	templates []scaledTemplate
}

var scaledDevices = []scaledDevice{
	{"electrical.batteries.", []string{"houseBank", "starterBank", "thrusterBank", "windlassBank"}, []scaledTemplate{
		{"voltage", si("V"), `12.84`, `{"description":"Voltage of battery $"}`},
		{"current", si("A"), `-6.2`, `{"description":"Current of battery $, +ve charging"}`},
		{"temperature", si("K"), `295.1`, `{"description":"Battery $","zones":[{"lower":318.15,"state":"alarm"}]}`},
		{"capacity.stateOfCharge", si("ratio"), `0.81`, `{"description":"State of charge of battery $"}`},
		{"capacity.stateOfHealth", si("ratio"), `0.97`, `{"description":"State of health of battery $"}`},
		{"capacity.timeRemaining", si("s"), `null`, `{"description":"Time to empty; null when charging"}`},
		{"capacity.dischargeSinceFull", si("C"), `-61200`, `{"description":"Charge removed since full"}`},
		{"cellVoltages", si("V"), `[3.312,3.309,3.315,3.311]`, `{"description":"Cell voltages of battery $"}`},
		{"lifetimeDischarge", si("C"), ``, `{"description":"Lifetime discharge"}`},
	}},
	{"electrical.solar.", []string{"archArray", "biminiArray", "deckArray"}, []scaledTemplate{
		{"panelVoltage", si("V"), `38.2`, `{"description":"Panel voltage of solar $","displayName":"$ PV"}`},
		{"panelCurrent", si("A"), `5.6`, `{"description":"Panel current of solar $"}`},
		{"panelPower", si("W"), `212`, `{"description":"Power of solar array $","displayName":"$ PV W"}`},
		{"controllerMode", null, `"bulk"`, `{"description":"Charging mode of solar controller $"}`},
		{"yieldToday", si("J"), `3960000`, `{"description":"Energy from solar $ today"}`},
	}},
	{"electrical.inverters.", []string{"galleyInverter", "saloonInverter"}, []scaledTemplate{
		{"dc.voltage", si("V"), `12.7`, `{"description":"DC input voltage","displayName":"$ DC V"}`},
		{"ac.lineNeutralVoltage", si("V"), `230.1`, `{"description":"AC output voltage of $"}`},
		{"ac.frequency", si("Hz"), `50.01`, `{"description":"AC output frequency of $"}`},
		{"inverterMode", null, `"inverting"`, `{"description":"Operating mode of inverter $"}`},
	}},
	{"propulsion.", []string{"portMain", "starboardMain", "genset"}, []scaledTemplate{
		{"revolutions", si("Hz"), `27.5`, `{"description":"Revolutions of engine $","displayName":"$ RPM"}`},
		{"temperature", si("K"), `355.4`, `{"description":"Engine $","zones":[{"lower":373.15,"state":"alarm"}]}`},
		{"oilPressure", si("Pa"), `305000`, `{"description":"Engine $","zones":[{"upper":1e5,"state":"alarm"}]}`},
		{"coolantTemperature", si("K"), `352.9`, `{"description":"Coolant temperature of engine $"}`},
		{"exhaustTemperature", si("K"), `612.4`, `{"description":"Exhaust temperature of engine $"}`},
		{"fuel.rate", si("m3/s"), `1.1e-6`, `{"description":"Fuel rate of engine $","displayName":"$ fuel"}`},
		{"runTime", si("s"), `3611520`, `{"description":"Running time of engine $ (hour meter)"}`},
		{"engineLoad", si("ratio"), `0.54`, `{"description":"Load of engine $","displayName":"$ load"}`},
		{"transmission.oilTemperature", si("K"), `338.1`, `{"description":"Gearbox oil temperature"}`},
		{"transmission.gear", null, `"Forward"`, `{"description":"Gear selected on engine $"}`},
		{"state", null, `"started"`, `{"description":"State of engine $","displayName":"$ state"}`},
	}},
	{"tanks.", []string{"fuel.mainTank", "freshWater.forwardTank", "wasteWater.aftTank", "blackWater.headTank"}, []scaledTemplate{
		{"capacity", si("m3"), `0.25`, `{"description":"Capacity of tank $"}`},
		{"currentLevel", si("ratio"), `0.47`, `{"description":"Tank $","zones":[{"upper":0.1,"state":"warn"}]}`},
		{"currentVolume", si("m3"), `0.1175`, `{"description":"Volume of fluid in tank $"}`},
		{"name", null, `"Synthetic tank"`, `{"description":"Name of tank $ on the sender"}`},
	}},
	{"environment.inside.", []string{"saloon", "forwardCabin", "engineRoom", "refrigerator"}, []scaledTemplate{
		{"temperature", si("K"), `294.3`, `{"description":"Air temperature in $","displayName":"$ temp"}`},
		{"relativeHumidity", si("ratio"), `0.58`, `{"description":"Relative humidity in $"}`},
		{"dewPointTemperature", si("K"), `285.7`, `{"description":"Dew point in $"}`},
		{"pressure", si("Pa"), `101480`, `{"description":"Air pressure in $"}`},
	}},
	{"electrical.switches.", []string{"navigationLights", "deckFloodLight", "bilgePump", "cabinLights"}, []scaledTemplate{
		{"state", null, `true`, `{"description":"Circuit $ on or off","displayName":"$"}`},
		{"dimmingLevel", si("ratio"), `0.8`, `{"description":"Dimming level of $"}`},
		{"type", null, `"dimmer"`, `{"description":"Kind of switched circuit $"}`},
	}},
	{"sensors.", []string{"gnssReceiver", "aisTransponder", "fluxgateCompass"}, []scaledTemplate{
		{"fromBow", si("m"), `4.2`, `{"description":"Distance of sensor $ from the bow","displayName":"$ bow"}`},
		{"fromCenter", si("m"), `-0.3`, `{"description":"Distance of sensor $ from the centreline"}`},
		{"location", absent, `{"deck":"cockpit","mount":"rail"}`, `{"description":"Where sensor $ is mounted"}`},
		{"position", absent, `{"latitude":48.3791,"longitude":-4.4712}`, `{"description":"Last fix of sensor $","displayName":"$ fix"}`},
		{"sensorType", null, `"GNSS"`, `{"description":"The type of sensor $"}`},
	}},
}

// WithChangedUnits returns a copy of records in which n path records, spread
// evenly over the catalog, have their unit replaced by "changed" — a new
// revision with a known fraction of changed records, for the activation
// benchmarks. It panics when records hold fewer than n paths.
func WithChangedUnits(records []*catalog.Record, n int) []*catalog.Record {
	out := append([]*catalog.Record(nil), records...)
	paths := 0
	for _, r := range out {
		if r.Kind() == catalog.KindPath {
			paths++
		}
	}
	if n <= 0 || paths < n {
		panic("examples: WithChangedUnits needs at least n paths")
	}
	changed, seen := 0, 0
	for i, r := range out {
		p, ok := r.AsPath()
		if !ok {
			continue
		}
		if seen++; seen%(paths/n) != 0 || changed == n {
			continue
		}
		p.Unit = catalog.UnitOf("changed")
		out[i] = must(catalog.NewPath(p))
		changed++
	}
	return out
}
