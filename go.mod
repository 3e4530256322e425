module github.com/yachtmemory/sourcecatalog

go 1.24

require (
	github.com/gowebpki/jcs v1.0.2
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/google/uuid v1.6.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
