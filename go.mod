module github.com/yachtmemory/sourcecatalog

go 1.24

require (
	github.com/coder/websocket v1.8.14
	github.com/go-sql-driver/mysql v1.9.3
	github.com/google/uuid v1.6.0
	github.com/gowebpki/jcs v1.0.2
	github.com/stretchr/testify v1.12.1
)

require (
	filippo.io/edwards25519 v1.1.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
