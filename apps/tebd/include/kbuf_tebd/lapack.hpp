#ifndef KBUF_TEBD_LAPACK_HPP
#define KBUF_TEBD_LAPACK_HPP

/// @file
/// The LAPACK routines kbuf-tebd calls, by their Fortran names (host memory, column-major).

extern "C" {
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s,
             double* u, const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork,
             int* iwork, int* info);
void dgesvd_(const char* jobu, const char* jobvt, const int* m, const int* n, double* a,
             const int* lda, double* s, double* u, const int* ldu, double* vt, const int* ldvt,
             double* work, const int* lwork, int* info);
void dsyev_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
            double* work, const int* lwork, int* info);
}

#endif  // KBUF_TEBD_LAPACK_HPP
