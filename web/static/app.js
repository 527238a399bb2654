// jean2 web client (work in progress)
