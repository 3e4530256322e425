package examples

import (
	"strconv"

	"github.com/yachtmemory/sourcecatalog/catalog"
)

// Boat returns the example boat's catalog: 57 Signal K paths, each with the
// observation of its one selected source, and the 15 sources they come
// from. A sailing yacht with twin engines:
//
//   - an NMEA 0183 GPS (ttyUSB0.GP) and weather station (ttyUSB1.II);
//   - NMEA 2000 devices on can0, each named by a synthetic 64-bit NAME:
//     heading sensor, depth/speed/temperature transducer, wind sensor,
//     battery monitor, two engine interfaces, two tank senders, autopilot
//     and a DC switching module;
//   - the plugins signalk-derived-data and signalk-autostate, and the
//     server's "defaults" (a source with no label, type or metadata).
//
// Units are SI as Signal K specifies them, explicitly null for strings and
// booleans, and absent where Signal K gives none (positions, objects).
// Path metadata follows Signal K: description, displayName, displayScale
// and alarm zones. Every observation's value type is detected from a
// realistic sample value with catalog.DetectValueType, and all eight value
// types occur.
//
// The records come grouped by source, not in canonical order; envelope.Build
// sorts them. Each call returns new records.
func Boat() []*catalog.Record {
	var out []*catalog.Record
	for _, s := range boatSources {
		out = append(out, sourceRecord(s.ref, s.label, s.typ, s.meta))
		for _, p := range s.paths {
			out = append(out, observation(p.path, s.ref, p.sample), pathRecord(p.path, p.unit, p.meta))
		}
	}
	return out
}

type boatSource struct {
	ref, label, typ, meta string
	paths                 []boatPath
}

type boatPath struct {
	path   string
	unit   catalog.Unit
	sample string // JSON text of a value, "" when none was seen yet
	meta   string // JSON text of the Signal K metadata, "" for none
}

var (
	absent = catalog.Unit{}
	null   = catalog.NoUnit()
)

func si(symbol string) catalog.Unit { return catalog.UnitOf(symbol) }

// NMEA 2000 device classes and functions (NMEA 2000 Appendix B) of the
// example devices.
const (
	classSteering      = 40
	classDistribution  = 30
	classGeneration    = 35
	classPropulsion    = 50
	classNavigation    = 60
	classSensorIface   = 75
	classExternalEnv   = 85
	fnAttitude         = 140 // navigation: ownship attitude
	fnDepthSpeed       = 135 // navigation: bottom depth/speed
	fnAtmospheric      = 130 // external environment
	fnBattery          = 170 // electrical generation
	fnEngine           = 140 // propulsion
	fnFluidLevel       = 150 // sensor communication interface
	fnAutopilot        = 150 // steering and control
	fnLoadController   = 140 // electrical distribution
	mfrAirmar          = 135
	mfrMaretron        = 137
	mfrVictron         = 358
	mfrBG              = 381
	mfrRaymarine       = 1851
	industryMarine     = 4
	arbitraryAddrCapab = 1
)

// n2kName returns the 16 lowercase hex digits of an NMEA 2000 (ISO 11783-5)
// NAME, the identity Signal K puts in an NMEA 2000 source_ref after the
// interface: "can0.c0788c00e7e04312".
func n2kName(unique uint32, manufacturer, instance, function, class uint64) string {
	name := arbitraryAddrCapab<<63 | industryMarine<<60 | class<<49 | function<<40 |
		instance<<32 | manufacturer<<21 | uint64(unique&0x1fffff)
	s := strconv.FormatUint(name, 16)
	for len(s) < 16 {
		s = "0" + s
	}
	return s
}

// n2kMeta is the device metadata of an NMEA 2000 source.
func n2kMeta(manufacturer, model, serial, class, function string, address, instance int, software string) string {
	return `{"address":` + strconv.Itoa(address) +
		`,"deviceClass":"` + class + `","deviceFunction":"` + function +
		`","deviceInstance":` + strconv.Itoa(instance) +
		`,"manufacturer":"` + manufacturer + `","model":"` + model +
		`","serial":"` + serial + `","softwareVersion":"` + software + `"}`
}

var boatSources = []boatSource{
	{
		ref: "ttyUSB0.GP", label: "ttyUSB0", typ: "NMEA0183",
		meta: `{"talker":"GP","baudRate":4800,"sentences":["GGA","GSA","GSV","RMC","VTG"]}`,
		paths: []boatPath{
			{"navigation.position", absent, `{"longitude":-4.4712,"latitude":48.3791}`,
				`{"description":"The position of the vessel in 2 or 3 dimensions (WGS 84)","displayName":"Position"}`},
			{"navigation.speedOverGround", si("m/s"), `3.08`,
				`{"description":"Vessel speed over ground","displayName":"SOG","displayScale":{"lower":0,"upper":10}}`},
			{"navigation.courseOverGroundTrue", si("rad"), `4.3214`,
				`{"description":"Course over ground (true)","displayName":"COG"}`},
			{"navigation.magneticVariation", si("rad"), `-0.0349`,
				`{"description":"The magnetic variation (declination) at the current position"}`},
			{"navigation.datetime", null, `"2026-05-01T11:59:58.000Z"`,
				`{"description":"Time and date from the GNSS positioning system"}`},
			{"navigation.gnss.satellites", absent, `9`,
				`{"description":"Number of satellites used in the fix"}`},
			{"navigation.gnss.methodQuality", null, `"GNSS Fix"`,
				`{"description":"Quality of the satellite fix"}`},
			{"navigation.gnss.satellitesInView", absent,
				`{"count":3,"satellites":[{"id":5,"elevation":0.7505,"azimuth":2.0246,"SNR":41},{"id":13,"elevation":0.3491,"azimuth":5.1487,"SNR":36},{"id":29,"elevation":1.1345,"azimuth":0.4014,"SNR":44}]}`,
				`{"description":"Satellites in view, with elevation, azimuth and signal-to-noise ratio"}`},
		},
	},
	{
		ref: "ttyUSB1.II", label: "ttyUSB1", typ: "NMEA0183",
		meta: `{"talker":"II","baudRate":4800,"sentences":["MDA","XDR"]}`,
		paths: []boatPath{
			{"environment.outside.pressure", si("Pa"), `101620`,
				`{"description":"Current outside air ambient pressure","displayName":"Barometer","zones":[{"lower":0,"upper":98000,"state":"warn","message":"Low barometric pressure"}]}`},
			{"environment.outside.temperature", si("K"), `288.45`,
				`{"description":"Current outside air temperature","displayName":"Air temperature"}`},
			{"environment.outside.relativeHumidity", si("ratio"), `0.72`,
				`{"description":"Current outside air relative humidity"}`},
		},
	},
	{
		ref: "can0." + n2kName(204811, mfrAirmar, 0, fnAttitude, classNavigation), label: "can0", typ: "NMEA2000",
		meta: n2kMeta("Airmar", "H2183", "SYN-0000451", "Navigation", "Ownship Attitude", 35, 0, "1.021"),
		paths: []boatPath{
			{"navigation.headingMagnetic", si("rad"), `4.2586`,
				`{"description":"Current magnetic heading of the vessel","displayName":"Heading (magnetic)"}`},
			{"navigation.rateOfTurn", si("rad/s"), `-0.0052`,
				`{"description":"Rate of turn (positive to starboard)","displayName":"ROT"}`},
			{"navigation.attitude", absent, `{"roll":0.0524,"pitch":-0.0087,"yaw":4.2586}`,
				`{"description":"Vessel attitude: roll, pitch and yaw"}`},
		},
	},
	{
		ref: "can0." + n2kName(330147, mfrAirmar, 0, fnDepthSpeed, classNavigation), label: "can0", typ: "NMEA2000",
		meta: n2kMeta("Airmar", "DST810", "SYN-0003306", "Navigation", "Bottom Depth/Speed", 36, 0, "2.210"),
		paths: []boatPath{
			{"environment.depth.belowTransducer", si("m"), `7.42`,
				`{"description":"Depth below transducer","displayName":"Depth","zones":[{"lower":0,"upper":2,"state":"alarm","message":"Shallow"},{"lower":2,"upper":4,"state":"warn","message":"Approaching shallow water"}]}`},
			{"environment.water.temperature", si("K"), `285.95`,
				`{"description":"Current water temperature","displayName":"Sea temperature"}`},
			{"navigation.speedThroughWater", si("m/s"), `2.87`,
				`{"description":"Vessel speed through the water","displayName":"STW","displayScale":{"lower":0,"upper":10}}`},
			{"navigation.log", si("m"), ``,
				`{"description":"Total distance traveled"}`},
			{"navigation.trip.log", si("m"), `23150`,
				`{"description":"Total distance traveled on this trip / since trip reset"}`},
		},
	},
	{
		ref: "can0." + n2kName(770209, mfrBG, 0, fnAtmospheric, classExternalEnv), label: "can0", typ: "NMEA2000",
		meta: n2kMeta("B&G", "WS320", "SYN-0077020", "External Environment", "Atmospheric", 105, 0, "1.3.4"),
		paths: []boatPath{
			{"environment.wind.angleApparent", si("rad"), `-0.7854`,
				`{"description":"Apparent wind angle, negative to port","displayName":"AWA"}`},
			{"environment.wind.speedApparent", si("m/s"), `7.2`,
				`{"description":"Apparent wind speed","displayName":"AWS","zones":[{"lower":15,"upper":20,"state":"warn","message":"Strong wind"},{"lower":20,"state":"alarm","message":"Gale"}]}`},
		},
	},
	{
		ref: "can0." + n2kName(458115, mfrVictron, 0, fnBattery, classGeneration), label: "can0", typ: "NMEA2000",
		meta: n2kMeta("Victron Energy", "BMV-712 Smart", "SYN-HQ00001", "Electrical Generation", "Battery", 226, 0, "4.08"),
		paths: []boatPath{
			{"electrical.batteries.house.voltage", si("V"), `12.96`,
				`{"description":"Voltage of the house battery bank","displayName":"House voltage","zones":[{"upper":11.8,"state":"alarm","message":"House battery flat"},{"lower":11.8,"upper":12.2,"state":"warn","message":"House battery low"}]}`},
			{"electrical.batteries.house.current", si("A"), `-8.4`,
				`{"description":"Current flowing out (-ve) or in (+ve) of the house bank","displayName":"House current"}`},
			{"electrical.batteries.house.capacity.stateOfCharge", si("ratio"), `0.86`,
				`{"description":"State of charge of the house bank, 1 = 100%","displayName":"House SoC"}`},
			{"electrical.batteries.house.capacity.timeRemaining", si("s"), `null`,
				`{"description":"Time to discharge the house bank at the current rate; null while charging"}`},
			{"electrical.batteries.start.voltage", si("V"), `12.71`,
				`{"description":"Voltage of the engine start battery","displayName":"Start voltage"}`},
		},
	},
	{
		ref: "can0." + n2kName(120551, mfrMaretron, 0, fnEngine, classPropulsion), label: "can0", typ: "NMEA2000",
		meta:  n2kMeta("Maretron", "J2K100", "SYN-1205510", "Propulsion", "Engine", 48, 0, "1.0.12"),
		paths: enginePaths("port", `"started"`),
	},
	{
		ref: "can0." + n2kName(120552, mfrMaretron, 1, fnEngine, classPropulsion), label: "can0", typ: "NMEA2000",
		meta:  n2kMeta("Maretron", "J2K100", "SYN-1205520", "Propulsion", "Engine", 49, 1, "1.0.12"),
		paths: enginePaths("starboard", `"started"`),
	},
	{
		ref: "can0." + n2kName(91021, mfrMaretron, 0, fnFluidLevel, classSensorIface), label: "can0", typ: "NMEA2000",
		meta: n2kMeta("Maretron", "TLM100", "SYN-0910210", "Sensor Communication Interface", "Fluid Level", 60, 0, "1.2.1"),
		paths: []boatPath{
			{"tanks.fuel.0.capacity", si("m3"), `0.4`,
				`{"description":"Total capacity of the fuel tank"}`},
			{"tanks.fuel.0.currentLevel", si("ratio"), `0.62`,
				`{"description":"Level of fluid in the fuel tank, 0 to 1","displayName":"Fuel","zones":[{"lower":0,"upper":0.15,"state":"warn","message":"Fuel low"}]}`},
		},
	},
	{
		ref: "can0." + n2kName(91022, mfrMaretron, 1, fnFluidLevel, classSensorIface), label: "can0", typ: "NMEA2000",
		meta: n2kMeta("Maretron", "FPM100", "SYN-0910220", "Sensor Communication Interface", "Fluid Level", 61, 1, "1.4.0"),
		paths: []boatPath{
			{"tanks.freshWater.0.capacity", si("m3"), `0.45`,
				`{"description":"Total capacity of the fresh water tank"}`},
			{"tanks.freshWater.0.currentLevel", si("ratio"), `0.38`,
				`{"description":"Level of fluid in the fresh water tank, 0 to 1","displayName":"Water","zones":[{"lower":0,"upper":0.1,"state":"warn","message":"Fresh water low"}]}`},
		},
	},
	{
		ref: "can0." + n2kName(640333, mfrRaymarine, 0, fnAutopilot, classSteering), label: "can0", typ: "NMEA2000",
		meta: n2kMeta("Raymarine", "EV-1 Course Computer", "SYN-0640333", "Steering and Control", "Autopilot", 204, 0, "3.11"),
		paths: []boatPath{
			{"steering.autopilot.state", null, `"standby"`,
				`{"description":"Autopilot state: standby, auto, wind or route"}`},
			{"steering.autopilot.target.headingMagnetic", si("rad"), `null`,
				`{"description":"Target heading for the autopilot; null in standby"}`},
			{"steering.rudderAngle", si("rad"), `0.0262`,
				`{"description":"Current rudder angle, +ve is rudder to starboard","displayName":"Rudder"}`},
		},
	},
	{
		ref: "can0." + n2kName(55012, mfrMaretron, 0, fnLoadController, classDistribution), label: "can0", typ: "NMEA2000",
		meta: n2kMeta("Maretron", "DCR100", "SYN-0550120", "Electrical Distribution", "Load Controller", 80, 0, "1.1.7"),
		paths: []boatPath{
			{"electrical.switches.anchorLight.state", null, `true`,
				`{"description":"Anchor light circuit on or off","displayName":"Anchor light"}`},
		},
	},
	{
		ref: "signalk-derived-data.XX", label: "signalk-derived-data", typ: "Plugin",
		meta: `{"description":"Calculates derived values from other Signal K data","version":"1.38.0"}`,
		paths: []boatPath{
			{"environment.wind.speedTrue", si("m/s"), `5.1`,
				`{"description":"Wind speed over water","displayName":"TWS"}`},
			{"environment.wind.angleTrueWater", si("rad"), `-1.1868`,
				`{"description":"True wind angle based on speed through water, negative to port","displayName":"TWA"}`},
			{"environment.wind.directionTrue", si("rad"), `3.0718`,
				`{"description":"The wind direction relative to true north","displayName":"TWD"}`},
			{"environment.outside.dewPointTemperature", si("K"), `283.5`,
				`{"description":"Current outside dew point temperature"}`},
			{"environment.mode", null, `"day"`,
				`{"description":"Mode of the vessel based on the current conditions: day or night"}`},
			{"navigation.headingTrue", si("rad"), `4.2237`,
				`{"description":"The current true north heading of the vessel","displayName":"Heading (true)"}`},
			{"performance.velocityMadeGood", si("m/s"), `1.18`,
				`{"description":"The current velocity made good toward the wind","displayName":"VMG"}`},
			{"tanks.fuel.0.currentVolume", si("m3"), `0.248`,
				`{"description":"Volume of fluid in the fuel tank"}`},
		},
	},
	{
		ref: "signalk-autostate.XX", label: "signalk-autostate", typ: "Plugin",
		meta: `{"description":"Sets navigation.state from position, speed and engine state"}`,
		paths: []boatPath{
			{"navigation.state", null, `"sailing"`,
				`{"description":"Current navigational state: moored, anchored, motoring or sailing","displayName":"Nav state"}`},
		},
	},
	{
		ref: "defaults", // the server's configured defaults: no label, type or meta
		paths: []boatPath{
			{"communication.crewNames", null, `["Skipper (synthetic)","Crew (synthetic)"]`,
				`{"description":"Names of the crew on board"}`},
			{"design.length", absent, `{"overall":12.19,"hull":11.6,"waterline":10.4}`,
				`{"description":"The various lengths of the vessel, in meters"}`},
			{"design.draft", absent, `{"maximum":1.95}`,
				`{"description":"The draft of the vessel, in meters"}`},
			{"design.airHeight", si("m"), `18.3`,
				`{"description":"Total height of the vessel above the waterline"}`},
		},
	},
}

// enginePaths returns the paths an engine interface reports for one
// engine.
func enginePaths(id, state string) []boatPath {
	p := "propulsion." + id + "."
	return []boatPath{
		{p + "revolutions", si("Hz"), `28.5`,
			`{"description":"Engine revolutions (x60 for RPM)","displayName":"` + id + ` RPM","displayScale":{"lower":0,"upper":60}}`},
		{p + "temperature", si("K"), `356.2`,
			`{"description":"Engine temperature","displayName":"` + id + ` engine temp","zones":[{"lower":366.15,"upper":373.15,"state":"warn","message":"Engine hot"},{"lower":373.15,"state":"alarm","message":"Engine overheating"}]}`},
		{p + "oilPressure", si("Pa"), `310000`,
			`{"description":"Oil pressure","displayName":"` + id + ` oil","zones":[{"upper":100000,"state":"alarm","message":"Low oil pressure"}]}`},
		{p + "runTime", si("s"), `4402800`,
			`{"description":"Total running time for the engine (engine hour meter)"}`},
		{p + "state", null, state,
			`{"description":"The current state of the engine"}`},
	}
}
