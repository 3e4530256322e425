package signalk_test

import (
	"fmt"

	"github.com/yachtmemory/sourcecatalog/signalk"
)

// Map turns a full model into records: here a depth from an NMEA 2000
// sounder, the display units of one user dropped and the PGN timestamps
// of the device with them.
func ExampleMap() {
	model := `{
	  "self": "vessels.urn:mrn:signalk:uuid:c0d79334-4e25-4245-8892-54e8ccc8021d",
	  "vessels": {"urn:mrn:signalk:uuid:c0d79334-4e25-4245-8892-54e8ccc8021d": {
	    "name": "Aava",
	    "environment": {"depth": {"belowTransducer": {
	      "meta": {"units": "m", "description": "Depth below Transducer", "displayUnits": {"symbol": "ft"}},
	      "value": 4.2, "$source": "can0.115", "timestamp": "2026-12-01T21:00:00.000Z", "pgn": 128267}}}}},
	  "sources": {"can0": {"label": "can0", "type": "NMEA2000",
	    "115": {"n2k": {"src": "115", "manufacturerCode": "Airmar", "modelId": "DST800",
	      "pgns": {"128267": "2026-12-01T21:00:00.000Z"}}}}}
	}`
	records, err := signalk.Map([]byte(model), signalk.SelectLowestRef)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range records {
		fmt.Println(string(r.Canonical()))
	}
	// Output:
	// {"kind":"path","meta":{"description":"Depth below Transducer"},"path":"environment.depth.belowTransducer","unit":"m"}
	// {"kind":"source","label":"can0","meta":{"n2k":{"manufacturerCode":"Airmar","modelId":"DST800"}},"source_ref":"can0.115","type":"NMEA2000"}
	// {"kind":"observation","path":"environment.depth.belowTransducer","source_ref":"can0.115","value_type":"number"}
}
