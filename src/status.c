#include <admit/status.h>

const char *
admit_strerror(enum admit_status s)
{
	switch (s) {
	case ADMIT_OK:		return "success";
	case ADMIT_FULL:	return "filter is full";
	case ADMIT_EXISTS:	return "key already present";
	case ADMIT_NOTFOUND:	return "key not found";
	case ADMIT_REJECTED:	return "candidate rejected by admission policy";
	case ADMIT_NOMEM:	return "out of memory";
	case ADMIT_EINVAL:	return "invalid argument";
	case ADMIT_ECORRUPT:	return "snapshot is corrupt, truncated or not an admit snapshot";
	case ADMIT_EIO:		return "input/output error";
	case ADMIT_EBUFFER:	return "buffer too small";
	case ADMIT_ETOOBIG:	return "item larger than the structure can hold";
	case ADMIT_ENOTREG:	return "not a regular file";
	case ADMIT_LOADING:	return "the key is being loaded by another caller";
	}
	return "unknown admit status";
}
