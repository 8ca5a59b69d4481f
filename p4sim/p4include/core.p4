/*
 * p4sim: P4_16 core library (language specification v1.2.x).
 *
 * Written for p4sim from the P4_16 specification; declaration-compatible
 * with p4c's p4include/core.p4, so programs that include <core.p4> see the
 * same names, types and signatures under p4sim and under p4c.
 */

#ifndef _CORE_P4_
#define _CORE_P4_

// Built-in error codes; programs may add more with their own error { } blocks.
error {
    NoError,                // nothing went wrong
    PacketTooShort,         // extract/lookahead ran past the end of the packet
    NoMatch,                // no select case matched
    StackOutOfBounds,       // header stack index out of range
    HeaderTooShort,         // varbit extract longer than the field allows
    ParserTimeout,          // parser ran out of time
    ParserInvalidArgument   // parser primitive given an unsupported value
}

// Input packet as seen by a parser.
extern packet_in {
    // Fixed-size header: copy the next bits into hdr and advance.
    void extract<T>(out T hdr);
    // Header with one varbit field, whose size in bits is given.
    void extract<T>(out T variableSizeHeader,
                    in bit<32> variableFieldSizeInBits);
    // Peek at the next bits without advancing.
    T lookahead<T>();
    // Skip sizeInBits bits.
    void advance(in bit<32> sizeInBits);
    // Whole packet length in bytes.
    bit<32> length();
}

// Output packet as built by a deparser.
extern packet_out {
    // Append hdr (header, stack, union, or struct of those); invalid headers
    // are skipped.
    void emit<T>(in T hdr);
}

// Parser-only check: if check is false, set the parser error to toSignal and
// go to the reject state.
extern void verify(in bool check, in error toSignal);

// The action that does nothing.
@noWarn("unused")
action NoAction() {}

// Table key match kinds every target knows.
match_kind {
    exact,      // all bits must be equal
    ternary,    // equal under a mask
    lpm         // longest prefix
}

// Compile-time assertion; returns check so it can initialise a constant.
extern bool static_assert(bool check, string message);
extern bool static_assert(bool check);

#endif  /* _CORE_P4_ */
