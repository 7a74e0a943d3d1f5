/* SPDX-License-Identifier: MIT */
/* The error table's strings, generated from the WEFT_ERRORS X-macro. */
#include "weft/error.h"

const char *weft_strerror(int code) {
  switch (code) {
#define WEFT_ERROR_MSG_(name, value, msg)                                      \
  case value:                                                                  \
    return msg;
    WEFT_ERRORS(WEFT_ERROR_MSG_)
#undef WEFT_ERROR_MSG_
  default:
    return "unknown error";
  }
}

const char *weft_strerror_name(int code) {
  switch (code) {
#define WEFT_ERROR_NAME_(name, value, msg)                                     \
  case value:                                                                  \
    return "WEFT_" #name;
    WEFT_ERRORS(WEFT_ERROR_NAME_)
#undef WEFT_ERROR_NAME_
  default:
    return "WEFT_E?";
  }
}
