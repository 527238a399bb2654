package web

// HandlerFor lets the tests serve another build of the client.
var HandlerFor = handlerFor
