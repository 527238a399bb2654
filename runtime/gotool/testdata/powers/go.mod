module jean2.local/tools/powers

go 1.26.8

require github.com/jean2/jean2 v0.0.0
