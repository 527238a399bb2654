package toolfs

import "syscall"

const oNonBlock = syscall.O_NONBLOCK
