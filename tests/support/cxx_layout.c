/* SPDX-License-Identifier: MIT */
/* The C side of test_cxx.cpp (see cxx_layout.h). */
#include "support/cxx_layout.h"

#include <stdatomic.h>

const cxx_layout_row_t cxx_layout_c[] = {
#define WEFT_LAYOUT_TYPE(T) {#T, sizeof(T), _Alignof(T)},
#include "cxx_layout_list.h"
#undef WEFT_LAYOUT_TYPE
};

const size_t cxx_layout_c_count = sizeof cxx_layout_c / sizeof cxx_layout_c[0];

void cxx_layout_c_counter_add(weft_counter_t *counter, uint32_t n) {
  atomic_fetch_add_explicit(&counter->pending, n, memory_order_relaxed);
}

weft_component_desc_t cxx_layout_c_probe_desc(void) {
  return WEFT_COMPONENT_DESC(cxx_probe_t);
}

weft_field_desc_t cxx_layout_c_probe_field(void) {
  return WEFT_FIELD(cxx_probe_t, xyz);
}
