cmake_policy(SET CMP0057 NEW)
# cmake -P script: fails if the machine code of function FUNCTION in EXE (x86-64), or of a
# function it calls (up to DEPTH levels), holds an atomic read-modify-write (a lock prefix or
# xchg with memory; xchg between registers is a nop) or calls a mutex, malloc or operator new. Callees whose names match SKIP (the cold
# first-call path) are not followed. It must find an RMW in CONTROL, else the check is blind.
#   -DOBJDUMP=... -DEXE=... -DFUNCTION=... -DCONTROL=... [-DSKIP=regex] [-DDEPTH=n]
if(NOT DEPTH)
  set(DEPTH 6)
endif()
execute_process(COMMAND "${OBJDUMP}" -d --no-show-raw-insn "${EXE}"
                OUTPUT_VARIABLE dis RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "objdump failed: ${err}")
endif()

# The body of function `name`: its lines up to the next blank line.
function(body_of name out)
  string(FIND "${dis}" "<${name}>:\n" at)
  if(at EQUAL -1)
    set(${out} "" PARENT_SCOPE)
    return()
  endif()
  string(SUBSTRING "${dis}" ${at} 200000 rest)
  string(FIND "${rest}" "\n\n" end)
  string(SUBSTRING "${rest}" 0 ${end} b)
  set(${out} "${b}" PARENT_SCOPE)
endfunction()

# GNU objdump prints `lock xadd ...` and `call a424 <f>`; llvm-objdump (CMAKE_OBJDUMP with
# clang) prints the lock prefix on a line of its own and `callq 0xa424 <f>`.
set(bad_pattern "[ \t](lock[ \t\n]|xchg[^\n]*\\()|call.*<(pthread_mutex_lock|malloc|_Znwm|__cxa_guard_acquire|__atomic_)")

set(visited "")
set(findings "")
function(visit name depth)
  if(name IN_LIST visited)
    return()
  endif()
  list(APPEND visited "${name}")
  set(visited "${visited}" PARENT_SCOPE)
  body_of("${name}" b)
  if(b STREQUAL "")
    return()
  endif()
  string(REGEX MATCHALL "[^\n]*(${bad_pattern})[^\n]*" hits "${b}")
  if(hits)
    set(findings "${findings}\n  in ${name}: ${hits}" PARENT_SCOPE)
  endif()
  if(depth GREATER 0)
    string(REGEX MATCHALL "callq?[ \t]+(0x)?[0-9a-f]+ <[^>@+]+>" calls "${b}")
    math(EXPR next "${depth} - 1")
    foreach(c IN LISTS calls)
      string(REGEX REPLACE ".*<([^>]+)>" "\\1" callee "${c}")
      if(SKIP AND callee MATCHES "${SKIP}")
        continue()
      endif()
      visit("${callee}" ${next})
      set(visited "${visited}" PARENT_SCOPE)
      set(findings "${findings}" PARENT_SCOPE)
    endforeach()
  endif()
endfunction()

body_of("${FUNCTION}" fbody)
if(fbody STREQUAL "")
  message(FATAL_ERROR "${FUNCTION} not found in ${EXE}")
endif()
body_of("${CONTROL}" cbody)
if(NOT cbody MATCHES "${bad_pattern}")
  message(FATAL_ERROR "the check finds no read-modify-write in ${CONTROL}: it is blind\n${cbody}")
endif()
visit("${FUNCTION}" ${DEPTH})
if(NOT findings STREQUAL "")
  message(FATAL_ERROR "${FUNCTION} reaches a lock, an allocation or an atomic "
                      "read-modify-write:${findings}")
endif()
list(LENGTH visited n)
message(STATUS "${FUNCTION} (${n} function(s) read, itself included): no lock prefix, xchg, mutex or "
               "allocation (cold path skipped: ${SKIP})")
