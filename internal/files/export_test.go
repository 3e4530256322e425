package files

// ReadAllLimit is ReadAll with another bound.
var ReadAllLimit = readAll
