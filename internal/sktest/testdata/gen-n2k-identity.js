// Generates n2k-identity.data: NMEA 2000 device identity frames (PGN 60928
// ISO Address Claim and PGN 126996 Product Information) for the four bus
// addresses of signalk-server's aava-n2k.data sample, which carries none.
// The server decodes them like frames from a real bus, so the sources tree
// gets canName, manufacturerCode, productName, serial and software version,
// and useCanName turns $source into label.<CAN name>. The devices are
// invented for the tests; the codes are real canboat enumerations.
//
//   NODE_PATH=<signalk-server install>/node_modules node gen-n2k-identity.js >n2k-identity.data
//
// Line format: canboat "plain" (timestamp,prio,pgn,src,dst,len,hex bytes),
// the format of aava-n2k.data; timestamps precede the sample's first frame
// (2014-08-15T19:00:00.042Z) so that a file made of these lines followed by
// the sample replays them first.
const { toPgn } = require('@canboat/canboatjs')

const devices = [
  { src: 160, unique: 100160, manufacturer: 'Garmin', deviceClass: 'Navigation', deviceFunction: 145, productCode: 1601, model: 'sktest GNSS 160', software: '3.10', version: 'A', serial: 'SKT0000160' },
  { src: 115, unique: 100115, manufacturer: 'Airmar', deviceClass: 'Navigation', deviceFunction: 150, productCode: 1151, model: 'sktest DST 115', software: '2.2.0', version: 'B', serial: 'SKT0000115' },
  { src: 43, unique: 100043, manufacturer: 'Vesper Marine Ltd', deviceClass: 'Communication', deviceFunction: 135, productCode: 431, model: 'sktest AIS 43', software: '1.0.7', version: 'C', serial: 'SKT0000043' },
  { src: 129, unique: 100129, manufacturer: 'Victron Energy', deviceClass: 'Electrical Generation', deviceFunction: 170, productCode: 1291, model: 'sktest BMV 129', software: '4.01', version: 'D', serial: 'SKT0000129' }
]

function line (ms, prio, pgn, src, data) {
  const ts = new Date(Date.UTC(2014, 7, 15, 19, 0, 0, ms)).toISOString()
  const hex = [...data].map((b) => b.toString(16).padStart(2, '0')).join(',')
  return `${ts},${prio},${pgn},${src},255,${data.length},${hex}`
}

let ms = 0
for (const d of devices) {
  console.log(line(ms++, 6, 60928, d.src, toPgn({
    pgn: 60928,
    fields: {
      uniqueNumber: d.unique,
      manufacturerCode: d.manufacturer,
      deviceInstanceLower: 0,
      deviceInstanceUpper: 0,
      deviceFunction: d.deviceFunction,
      deviceClass: d.deviceClass,
      systemInstance: 0,
      industryGroup: 'Marine',
      arbitraryAddressCapable: 'Yes'
    }
  })))
  console.log(line(ms++, 6, 126996, d.src, toPgn({
    pgn: 126996,
    fields: {
      nmea2000Version: 2.1,
      productCode: d.productCode,
      modelId: d.model,
      softwareVersionCode: d.software,
      modelVersion: d.version,
      modelSerialCode: d.serial,
      certificationLevel: 1,
      loadEquivalency: 1
    }
  })))
}
