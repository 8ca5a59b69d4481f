// X-macros over the K gradient lanes: INA_FOR_EACH_LANE(M) expands M(0) ... M(K-1).
// P4_16 has no loops over fields, so per-lane code is written once as a macro and
// expanded here; INA_LANES (default set by each program) picks K.
#ifndef _INA_LANES_P4_
#define _INA_LANES_P4_

#define INA_LANES_4(M) M(0) M(1) M(2) M(3)
#define INA_LANES_8(M) INA_LANES_4(M) \
    M(4) M(5) M(6) M(7)
#define INA_LANES_16(M) INA_LANES_8(M) \
    M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15)
#define INA_LANES_32(M) INA_LANES_16(M) \
    M(16) M(17) M(18) M(19) M(20) M(21) M(22) M(23) M(24) M(25) M(26) M(27) M(28) M(29) M(30) M(31)
#define INA_LANES_64(M) INA_LANES_32(M) \
    M(32) M(33) M(34) M(35) M(36) M(37) M(38) M(39) M(40) M(41) M(42) M(43) M(44) M(45) M(46) M(47) \
    M(48) M(49) M(50) M(51) M(52) M(53) M(54) M(55) M(56) M(57) M(58) M(59) M(60) M(61) M(62) M(63)

#if INA_LANES == 64
#define INA_FOR_EACH_LANE(M) INA_LANES_64(M)
#elif INA_LANES == 32
#define INA_FOR_EACH_LANE(M) INA_LANES_32(M)
#elif INA_LANES == 16
#define INA_FOR_EACH_LANE(M) INA_LANES_16(M)
#elif INA_LANES == 8
#define INA_FOR_EACH_LANE(M) INA_LANES_8(M)
#elif INA_LANES == 4
#define INA_FOR_EACH_LANE(M) INA_LANES_4(M)
#else
#error "INA_LANES must be 4, 8, 16, 32 or 64"
#endif

#endif
