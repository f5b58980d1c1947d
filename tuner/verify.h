/*
** verify.h — the CPU float64 reference conv and the precision contract.
**
** A variant may win only under the precision it meets, checked against a
** float64 reference on the same inputs (DESIGN.md, "Precision contract").
** The reference comes with two per-output figures the tolerance scales with:
** abs_sum = sum |x*w| (+|b|) and sq_sum = sum (x*w)^2 (+b^2); a residual
** problem's residual is one more term of each.
**
** The contract.  L = (C/groups)*R*S (+1 with bias, +1 with a residual), n = number
** of outputs,
** u_acc = 2^-24 (fp32 accumulation), and
**   tf32: u_op = 2^-11 (operands rounded to nearest TF32), c_op = 1.0,
**         c_acc = 0.75
**   fp32: u_op = 2^-22 (the residual of a 3xTF32 split; FFMA is 2^-24
**         class), c_op = 2.0, c_acc = 0.75
** An output y passes when all of these hold:
**   1. every element is finite (an unwritten, NaN-poisoned output fails);
**   2. elementwise, a worst-case forward-error bound:
**        |y_i - ref_i| <= (2*u_op + (L+1)*u_acc) * abs_sum_i + 1e-37
**   3. Frobenius, a statistical bound for random inputs like the tuner's:
**        ||y - ref||_2 <= (1 + 3/sqrt(n))
**                         * (c_op*u_op + c_acc*u_acc*sqrt(L)) * A
**      with A = sqrt(sum_i sq_sum_i).
**   4. on the headline problem's shape (any batch), DESIGN.md's figures:
**        tf32: rel err <= 3.5e-4, max abs err <= 7e-4;
**        fp32: |y_i - ref_i| <= 1e-4 + 1e-4*|ref_i|, rel err <= 1e-6.
** verify.c derives the constants and says what each criterion catches.
*/
#ifndef CT_TUNE_VERIFY_H
#define CT_TUNE_VERIFY_H

#include <stdint.h>

#include "convtune.h"
#include "ct_check.cuh" /* templates/: the scan, shared with the GPU check */

/* The float64 reference of problem *p on host tensors x (N*C*H*W), w
** (K*(C/groups)*R*S) and b (K; may be NULL when p->bias is 0), fp32 in the
** problem's layout (NCHW / KCRS, or NHWC / KRSC).  Writes N*K*P*Q doubles
** in the output's layout (NKPQ or NPQK) into each of y (sum x*w (+b),
** through p->act: ct_tune_activate), abs_sum
** (sum |x*w| (+|b|)) and sq_sum (sum (x*w)^2 (+b^2)); abs_sum and sq_sum
** may be NULL when not wanted.  Terms that fall on zero padding contribute
** nothing.  Products of floats are exact in float64; the sums' own rounding
** (about L*2^-53 relative) is far below every tolerance.
** Returns CT_OK, CT_ERR_INVALID_ARG (a required pointer NULL, or p has a
** residual: ct_tune_reference_cpu_residual) or CT_ERR_INVALID_PROBLEM. */
ct_status ct_tune_reference_cpu(const ct_problem *p, const float *x,
                                const float *w, const float *b, double *y,
                                double *abs_sum, double *sq_sum);

/* act applied to a float64 output: ReLU or ReLU6 clamp v, NaN stays NaN
** (as torch.relu and relu6); CT_ACT_NONE, or a value outside the enum,
** returns v. */
double ct_tune_activate(ct_activation act, double v);

/* ct_tune_reference_cpu for any problem: with p->residual, res (N*K*P*Q
** floats in the output's layout: y's value on entry) is added after the
** bias, before the activation, as one more term of all three figures; res may be
** NULL otherwise. */
ct_status ct_tune_reference_cpu_residual(const ct_problem *p, const float *x,
                                         const float *w, const float *b,
                                         const float *res, double *y,
                                         double *abs_sum, double *sq_sum);

/* The verdict of the precision contract on one output. */
typedef struct ct_tune_check {
  double max_abs_err;  /* max |y - ref| over finite outputs */
  double rel_err;      /* ||y - ref||_2 / ||ref||_2 over finite outputs */
  double elem_ratio;   /* max_i |y_i - ref_i| / elementwise bound_i (<= 1
                          passes); +inf when an output is NaN/Inf */
  double frob_ratio;   /* ||y - ref||_2 / Frobenius bound (<= 1 passes),
                          over finite outputs */
  int64_t n_nonfinite; /* NaN/Inf outputs (an unwritten, NaN-poisoned
                          output counts) */
  int64_t worst_index; /* the element with the largest elem_ratio (the
                          first non-finite one if any); -1 if none */
  int passes;          /* 1: every criterion holds */
  char reason[192];    /* why it failed, "" when it passes */
} ct_tune_check;

/* Checks `count` outputs y (fp32, NCHW) of problem *p against the reference
** figures ref, abs_sum and sq_sum of ct_tune_reference_cpu (or the GPU
** reference, which computes the same) under p->precision, and fills *out.
** count is normally N*K*P*Q; the Frobenius bound's slack uses it as n.
** The scan follows templates/ct_check.cuh's order, as the GPU check does, so
** both give the same *out on the same data.
** Never fails: a NULL argument, count < 1, an unknown precision or no host
** memory for the tiles' figures gives passes = 0 with the reason (nothing is
** done when out is NULL). */
void ct_tune_contract(const ct_problem *p, const float *y, const double *ref,
                      const double *abs_sum, const double *sq_sum,
                      int64_t count, ct_tune_check *out);

/* The contract's verdict from the figures of its n_tiles tiles (tile t
** covers outputs [t*CT_CHECK_TILE, (t+1)*CT_CHECK_TILE) of count), merged in
** order.  What ct_tune_contract does after its scan, and what the GPU check
** does with the tiles its kernel wrote.  n_tiles must be
** ceil(count / CT_CHECK_TILE); otherwise, or with a NULL argument or an
** unknown precision, passes = 0 with the reason. */
void ct_tune_contract_finish(const ct_problem *p, const ct_check_tile *tiles,
                             int64_t n_tiles, int64_t count,
                             ct_tune_check *out);

/* The scan's constants for *p: the elementwise bound's coefficient
** 2*u_op + (L+1)*u_acc and the headline's fp32 atol = rtol.  Returns 1, or
** 0 for a NULL p or an unknown precision.  Either pointer may be NULL. */
int ct_tune_contract_coeffs(const ct_problem *p, double *elem_coef,
                            double *close_tol);

#endif /* CT_TUNE_VERIFY_H */
