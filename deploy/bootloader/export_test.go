package bootloader

// FindGRUB exposes findGRUB to the tests.
var FindGRUB = findGRUB
