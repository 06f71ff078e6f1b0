# TOPOTRAIN_SANITIZE=address|undefined|thread instruments host code of every target.
if(TOPOTRAIN_SANITIZE)
  if(NOT TOPOTRAIN_SANITIZE MATCHES "^(address|undefined|thread)$")
    message(FATAL_ERROR "TOPOTRAIN_SANITIZE must be address, undefined or thread (got '${TOPOTRAIN_SANITIZE}')")
  endif()
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${TOPOTRAIN_SANITIZE}> $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=${TOPOTRAIN_SANITIZE})
endif()
