// Multi-line dumps of struct fi_info and its attribute structures, as fi_info -v shows them.
#ifndef OFI_SRC_TOSTR_ATTRS_H
#define OFI_SRC_TOSTR_ATTRS_H

#include "src/tostr_writer.h"

#include <rdma/fabric.h>

namespace ofi::tostr {

// 'indent' is put in front of the heading line; the fields get one more level.
void write_tx_attr(TextSink &out, const char *indent, const fi_tx_attr *attr);
void write_rx_attr(TextSink &out, const char *indent, const fi_rx_attr *attr);
void write_ep_attr(TextSink &out, const char *indent, const fi_ep_attr *attr);
void write_domain_attr(TextSink &out, const char *indent, const fi_domain_attr *attr);
void write_fabric_attr(TextSink &out, const char *indent, const fi_fabric_attr *attr);
void write_info(TextSink &out, const fi_info *info);

// A fid describes itself through its fi_ops::tostr when it has one (also for fi_info's
// handle and nic): the callback gets the end of the text so far and the bytes left there,
// and its return value is ignored. Without one, "fid: <pointer>" is printed.
void write_fid(TextSink &out, const fid *object);

} // namespace ofi::tostr

#endif
