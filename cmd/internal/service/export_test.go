package service

var TuneGC = tuneGC
