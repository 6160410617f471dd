#version 450
// Routes cpu-store-latency / cpu-store-nt-latency, the device's side: one
// invocation answers the CPU's stores, round after round, in one dispatch.
//
// Round s: the CPU stores `bytes` bytes into device memory it maps (binding
// 0: device-local-host-visible, the BAR on a discrete GPU); 32-bit word i of
// round s holds value(s, i) below (of a last partial word, only the bytes
// stored). The CPU stores the last word after a fence, so the shader polls
// that word alone until it holds round s's value (then the whole store is
// visible), then answers in host memory the CPU polls (binding 1):
// answer.seq = s. One read a poll: reading every word put one serial device
// read per word into the round (188 us for 4 KiB on a PCIe Gen5 GPU). The CPU
// checks the bytes after each sample.
//
// Why it is written this way (each one a way to hang or to lie):
// - The buffers are `coherent volatile`: a plain load may be done once and
//   the loop spin on a register, and a non-coherent one may be served from a
//   cache the CPU's stores never reach. Volatile stores are system-scope on
//   NVIDIA, so the answer leaves the device at once.
// - Every wait is bounded: after max_polls polls the round answers with the
//   failure bit, the word it waited for and what that word held; and every
//   1024 polls it reads the abort word the CPU sets when it gives up.
// - A driver may cut a long loop short: llvmpipe (lavapipe) ends every loop
//   of an invocation once 65535 iterations have run in all (gallivm's loop
//   limiter), silently, as if its condition had failed; a spin written the
//   plain way then answers a round whose bytes it never saw (what an earlier
//   attempt at this route did on lavapipe). So every loop here notes how it
//   was left, one left by none of its exits answers why 3, and the CPU goes
//   on in a new dispatch.
// - A last word holding neither the last round's value nor this one's is
//   not failed at once (a partial word may become visible piece by piece): it
//   fails only if it is still wrong when the bound runs out; the CPU then
//   says which it was.
layout(local_size_x = 1) in;
layout(std430, set = 0, binding = 0) coherent volatile buffer stored_words { uint w[]; } st;
layout(std430, set = 0, binding = 1) coherent volatile buffer answer_words {
  uint seq;    // first - 1 once running; then each round's s, with fail_bit where it failed
  uint word;   // a failed round: the word that never showed round s's value
  uint seen;   // ... what it held when it gave up
  uint polls;  // ... polls made
  uint why;    // 1: max_polls ran out, 2: the CPU's abort word was set, 3: the driver cut a loop
} ans;
layout(push_constant) uniform params {
  uint first;       // the first round's s (>= 1)
  uint rounds;
  uint bytes;       // stored each round (1 to 4096)
  uint max_polls;   // per round
  uint abort_word;  // index of the abort word in binding 0, past the stored bytes
} pc;

const uint fail_bit = 0x80000000u;

uint value(uint s, uint i) { return (s * 0x9E3779B1u) ^ (i * 0x85EBCA77u); }

void main() {
  const uint last = (pc.bytes - 1u) / 4u;  // the word stored last
  const uint tail = pc.bytes % 4u;
  const uint mask = tail == 0u ? 0xffffffffu : (1u << (8u * tail)) - 1u;
  ans.seq = pc.first - 1u;  // running: the CPU starts its clock after this
  for (uint r = 0u; r < pc.rounds; ++r) {
    const uint s = pc.first + r;
    uint polls = 0u, bad = 0u, seen = 0u, why = 0u;
    bool seen_all = false;  // set only where the loop leaves by its own exit
    for (;;) {
      const uint v = st.w[last] & mask;
      if (v == (value(s, last) & mask)) {
        seen_all = true;
        break;
      }
      bad = last;
      seen = v;
      ++polls;
      if (polls >= pc.max_polls) {
        why = 1u;
        break;
      }
      if ((polls & 1023u) == 0u && st.w[pc.abort_word] != 0u) {
        why = 2u;
        break;
      }
    }
    if (!seen_all && why == 0u) why = 3u;  // left by none of its exits: the driver cut the loop
    if (why != 0u) {
      ans.word = bad;
      ans.seen = seen;
      ans.polls = polls;
      ans.why = why;
      memoryBarrierBuffer();  // the details before the round's answer (the CPU reads them after the fence, too)
      ans.seq = s | fail_bit;
      break;
    }
    ans.seq = s;
  }
  // Nothing after the loop: where the driver cut this loop itself, the
  // dispatch ends without answering the next round, and the CPU, seeing
  // it end, goes on in a new one.
}
