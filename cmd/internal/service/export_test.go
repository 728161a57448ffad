package service

var TuneGC = tuneGC

var APIServer = apiServer
