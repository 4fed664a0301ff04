! A Fortran program (use mpi_f08) that fills the halo of a 2-D block by MPI_Put of subarray
! types: each rank owns an (n+2) x (n+2) array exposed as a window, its interior filled with
! values that name the rank and position, and puts its first and last interior columns into the
! halo columns of its ring neighbours' windows, origin and target each a subarray of the whole
! array, between two fences. Under `--mca pml ucxdt` osc ucxdt moves them (Open MPI's Fortran
! bindings call the same one-sided component as C's). Prints "one_sided_f08: OK" and exits 0 when
! every halo cell holds the neighbour's value and no other cell changed.
program one_sided_f08
    use mpi_f08
    implicit none
    integer, parameter :: n = 24
    real(8), allocatable, target :: a(:, :)
    type(MPI_Win) :: win
    type(MPI_Datatype) :: first, last, left_halo, right_halo
    integer :: me, np, left, right, i, j, bad
    integer(kind=MPI_ADDRESS_KIND) :: bytes
    real(8) :: want

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, me)
    call MPI_Comm_size(MPI_COMM_WORLD, np)
    left = modulo(me - 1, np)
    right = modulo(me + 1, np)
    allocate(a(0:n + 1, 0:n + 1))
    a = -1.0d0
    do j = 1, n
        do i = 1, n
            a(i, j) = value(me, i, j)
        end do
    end do
    ! Column c of the interior rows, as a subarray of the whole (n+2) x (n+2) array.
    call column(1, first)
    call column(n, last)
    call column(0, left_halo)
    call column(n + 1, right_halo)
    bytes = int(8, MPI_ADDRESS_KIND) * (n + 2) * (n + 2)
    call MPI_Win_create(a, bytes, 8, MPI_INFO_NULL, MPI_COMM_WORLD, win)
    call MPI_Win_fence(0, win)
    ! My first interior column becomes my left neighbour's right halo, my last its right one's left.
    call MPI_Put(a, 1, first, left, 0_MPI_ADDRESS_KIND, 1, right_halo, win)
    call MPI_Put(a, 1, last, right, 0_MPI_ADDRESS_KIND, 1, left_halo, win)
    call MPI_Win_fence(0, win)
    bad = 0
    do j = 0, n + 1
        do i = 0, n + 1
            if (i >= 1 .and. i <= n .and. j == 0) then
                want = value(left, i, n)
            else if (i >= 1 .and. i <= n .and. j == n + 1) then
                want = value(right, i, 1)
            else if (i >= 1 .and. i <= n .and. j >= 1 .and. j <= n) then
                want = value(me, i, j)
            else
                want = -1.0d0
            end if
            if (a(i, j) /= want) then
                if (bad < 5) print '(a,i0,a,i0,a,i0,a,f12.1,a,f12.1)', 'one_sided_f08: rank ', me, &
                    ' cell (', i, ',', j, ') is ', a(i, j), ', not ', want
                bad = bad + 1
            end if
        end do
    end do
    call MPI_Win_free(win)
    call MPI_Type_free(first)
    call MPI_Type_free(last)
    call MPI_Type_free(left_halo)
    call MPI_Type_free(right_halo)
    call MPI_Allreduce(MPI_IN_PLACE, bad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    if (me == 0 .and. bad == 0) print '(a)', 'one_sided_f08: OK'
    call MPI_Finalize()
    if (bad /= 0) stop 1
contains
    real(8) function value(rank, i, j)
        integer, intent(in) :: rank, i, j
        value = real(rank * 1000000 + i * 1000 + j, 8)
    end function
    subroutine column(c, t)
        integer, intent(in) :: c
        type(MPI_Datatype), intent(out) :: t
        call MPI_Type_create_subarray(2, [n + 2, n + 2], [n, 1], [1, c], MPI_ORDER_FORTRAN, &
                                      MPI_DOUBLE_PRECISION, t)
        call MPI_Type_commit(t)
    end subroutine
end program
