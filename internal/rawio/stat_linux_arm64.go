package rawio

import "syscall"

const sysFstatat = syscall.SYS_FSTATAT
